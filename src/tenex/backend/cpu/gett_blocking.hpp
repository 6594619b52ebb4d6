// How the GETT kernel (gett_kernel.hpp) cuts a problem: which operand goes in panels and which
// in strips, in what order the strip operand's modes are numbered (Roles), and the blocks of N
// and K each task packs and multiplies, with the scratch they take (Blocking). Planned once per
// call, for the tile of the SIMD target the kernels run (gett_kernel.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction::gett {


// Values of K one block of the strip operand holds at most on skinny shapes: a strip of it
// ([kc][2 vectors], 32 KB of doubles) stays in the L1 while each of the few panels runs over it.
constexpr std::size_t kBlockK = 256;
// The same where neither side is skinny: the sums of a tile run over all of K up to this, so
// that c is read and written once per tile rather than once per 256 values of K
// (aefc,fbed->abcd, K = 900: 20.1 ms in blocks of 256, 19.1 ms in one block; dgemm 18.5 ms).
// Strip and panel then both stream from the L2.
constexpr std::size_t kWideBlockK = 1024;
// Strips of N one block holds at most, and bytes at most (a block stays in the L2).
constexpr std::size_t kBlockStrips = 16;
// The same where the sums go to c in c's order (see roles()), whose blocks are whole rows.
constexpr std::size_t kMostStrips = 32;
// (Bytes of a block at most: tuning::gett_block_bytes(), half the L2.)
// From this K on, the direct path runs each panel against every strip of a block, else each
// strip against every panel.
constexpr std::size_t kPanelOuterK = 128;
// Values of N a block of doubles spans at most in the scatter rules of roles() (floats too).
constexpr std::size_t kBlockSpan = 256;
// Bytes of one row of a c_order block at most (see roles()).
constexpr std::size_t kMostRow = 1024;
// Bytes of a staged block's values of N at most (see blocking()): its sums, up to 32 rows of
// panels, stay in the L2.
constexpr std::size_t kStagedBytes = std::size_t{16} << 10;
// A strip operand this small is packed from wherever its values lie (see roles()), and where
// c is only written and larger than kStreamStoreBytes, whole vectors of sums that land on a
// 64-byte line of c go past the caches (tuning.hpp).
using tuning::kCachedStripBytes;
using tuning::kStreamStoreBytes;
// Rows of a panel at most: 12 rows of two vectors of sums, 24 of the 32 registers of AVX-512
// or NEON; 6 (12 of 16) on targets of 16 registers (AVX2, SSE4), so that no sum spills.
constexpr std::size_t kPanelRows = 12;
constexpr std::size_t kNarrowPanelRows = 6;
// Bytes of a boxed block's staging range at most (see write_boxed): it stays in the L1.
constexpr std::size_t kBoxStageBytes = std::size_t{32} << 10;
// Modes of a box at most (its odometers' digits live on the stack).
constexpr std::size_t kBoxModes = 32;

inline std::size_t ceil_div(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

// operand's free modes are numbered, or panel < 0 where the kernel does not run.
struct Roles {
  int panel = -1, strip = -1;
  bool skinny = false;
  // The sums go to c through a buffer, a vector of lanes that lie together in c at a time
  // (see roles()): `c_step` values of N apart in a block are side by side in c.
  bool c_order = false;
  std::size_t c_step = 0;
  std::size_t c_extent = 0;  // of c's stride-1 mode
  // c's stride-1 mode and a row's modes are together dense in c: c_extent rows from a value of
  // the modes outside them fill one range of c (see write_staged).
  bool c_dense = false;
  bool rows_in_place = false;   // a row's values lie together in the strip operand: read there, unpacked
  std::vector<int> strip_free;  // slowest first
};

// How the problem is cut.
struct Blocking {
  Roles roles;
  std::size_t m = 0, n = 0, k = 0;  // the panel operand's free values, the strip one's, K
  std::size_t rows = 0;             // of a panel: an even number up to kPanelRows
  std::size_t panels = 0;           // rows * panels >= m
  std::size_t kc = 0;               // values of K per block
  bool direct = false;              // sums go from the registers to c (see blocking)
  std::size_t nc = 0;               // values of N per block: whole strips, or c_order's whole rows
  std::size_t ld = 0;               // nc rounded up to whole strips: a packed block's width and the sums'
  std::size_t strip = 0;            // values of N per strip: two vectors
  std::size_t n_blocks = 0;
  std::size_t c_run = 1;    // the strip operand's columns side by side in c from c's stride-1 mode on
  bool staged = false;      // c_order blocks of c_extent rows, written through a staging row (write_staged)
  std::size_t m_parts = 1;  // tasks per block of N (direct only): parts of the panels
  // Boxed blocks (see boxed_blocks): a block of N is every value of the strip operand's
  // `box_whole` innermost modes (box_inner columns) times up to box_q values of the next one,
  // the cut mode (of extent box_cut), at one value of the modes outside it.
  bool boxed = false;
  std::size_t box_whole = 0, box_inner = 1, box_cut = 1, box_q = 1, box_per_outer = 1;
  std::size_t packed = 0;      // elements of a packed block of the strip operand (none where rows lie in place)
  std::size_t per_thread = 0;  // elements of scratch: a block of the strip operand, then the sums
};

// Elements of one of write_boxed's two stages: a range of c, then a vector's (64 bytes) slack.
inline std::size_t box_stage_elements(std::size_t element_size) { return (kBoxStageBytes + 64) / element_size; }

// The SIMD target's tile: values of the problem's type per vector, and rows of a panel at most.
struct Tile {
  std::size_t lanes = 0, rows = 0;
};

inline std::size_t panel_rows_for(std::size_t registers) { return registers >= 32 ? kPanelRows : kNarrowPanelRows; }

// The tile of the target the kernels run now (simd.hpp).
Tile chosen_tile(const Problem& p);

// The roles of the operands, or panel < 0 where the kernel does not run (gett_panel_operand).
Roles roles(const Problem& p);

// How the problem is cut for `threads` threads and the target's tile.
Blocking blocking(const Problem& p, std::size_t threads, Tile tile);

// Elements of scratch: the panels, then each thread's block of the strip operand and sums.
std::size_t scratch_elements(const Blocking& g, std::size_t threads);

}  // namespace tenex::detail::cpu::contraction::gett
