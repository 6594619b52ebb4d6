#include "tenex/backend/dist/dist_context.hpp"

#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "tenex/backend/dist/scalapack.hpp"
#include "tenex/callable_exception.hpp"
#include "tenex/error.hpp"

namespace tenex::dist {

namespace detail {

namespace {

std::mutex current_mutex;
// Every context made, latest last; the latest alive one is current.
std::vector<std::weak_ptr<DistContext>>& contexts() {
  static auto* made = new std::vector<std::weak_ptr<DistContext>>;  // sets may run at exit
  return *made;
}

}  // namespace

DistContext::~DistContext() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // too late: MPI freed everything
  if (blacs >= 0) Cblacs_gridexit(blacs);
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

std::shared_ptr<DistContext> current_context() {
  std::lock_guard<std::mutex> lock(current_mutex);
  auto& made = contexts();
  while (!made.empty()) {
    if (auto alive = made.back().lock()) return alive;
    made.pop_back();
  }
  return nullptr;
}

void set_current_context(const std::shared_ptr<DistContext>& context) {
  std::lock_guard<std::mutex> lock(current_mutex);
  contexts().push_back(context);
}

PhaseTimes& phase_clock() {
  static PhaseTimes times;
  return times;
}

void agree(const DistContext& context, std::exception_ptr local_error) {
  // The lowest failing rank (size: none).
  int mine = local_error ? context.rank : context.size;
  int first = context.size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, context.comm);
  if (first == context.size) return;
  std::string message;
  int kind = 0;  // 0 Error, 1 NumericalError, 2 ShapeError, 3 BackendError
  if (context.rank == first) {
    try {
      std::rethrow_exception(local_error);
    } catch (const tenex::detail::CallableException& e) {
      // A tenex::map callable's exception: a tenex::Error with its text on every rank, as any
      // other failure (the other ranks cannot have the object, and an SPMD program catches alike).
      try {
        std::rethrow_exception(e.error);
      } catch (const std::exception& thrown) {
        message = std::string("tenex: a tenex::map callable threw: ") + thrown.what();
      } catch (...) {
        message = "tenex: a tenex::map callable threw an exception that is not a std::exception";
      }
    } catch (const NumericalError& e) {
      message = e.what();
      kind = 1;
    } catch (const ShapeError& e) {
      message = e.what();
      kind = 2;
    } catch (const BackendError& e) {
      message = e.what();
      kind = 3;
    } catch (const std::bad_alloc&) {
      message = "tenex: distributed backend: out of memory on rank " + std::to_string(first);
      kind = 3;
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
      message = "tenex: distributed backend: unknown error on rank " + std::to_string(first);
    }
  }
  int header[2] = {kind, static_cast<int>(message.size())};
  MPI_Bcast(header, 2, MPI_INT, first, context.comm);
  message.resize(static_cast<std::size_t>(header[1]));
  if (header[1] > 0) MPI_Bcast(message.data(), header[1], MPI_CHAR, first, context.comm);
  if (context.rank != first) message += " (raised on rank " + std::to_string(first) + ")";
  switch (header[0]) {
    case 1: throw NumericalError(message);
    case 2: throw ShapeError(message);
    case 3: throw BackendError(message);
    default: throw Error(message);
  }
}

}  // namespace detail

namespace {

/// Near-square grid for `size` ranks: the largest divisor of size not above its root.
void choose_grid(int size, int& rows, int& cols) {
  if (rows <= 0 && cols <= 0) {
    rows = 1;
    for (int r = 1; r * r <= size; ++r) {
      if (size % r == 0) rows = r;
    }
    cols = size / rows;
  } else if (rows <= 0) {
    rows = size % cols == 0 ? size / cols : 0;
  } else if (cols <= 0) {
    cols = size % rows == 0 ? size / rows : 0;
  }
}

}  // namespace

Context::Context(const void* communicator, std::size_t communicator_bytes, ContextOptions options) {
  if (communicator_bytes != sizeof(MPI_Comm)) {
    throw Error("tenex: dist::Context: the communicator is not an MPI_Comm (" + std::to_string(communicator_bytes) +
                " bytes, MPI_Comm has " + std::to_string(sizeof(MPI_Comm)) +
                "); pass MPI_COMM_WORLD or another MPI_Comm");
  }
  MPI_Comm user;
  std::memcpy(&user, communicator, sizeof(MPI_Comm));
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    throw Error(
        "tenex: dist::Context: MPI is not initialised (or already finalised); call MPI_Init before making "
        "a Context and MPI_Finalize after destroying it");
  }
  if (options.block_size == 0 || options.block_size > (1u << 20)) {
    throw Error("tenex: dist::Context: block_size " + std::to_string(options.block_size) +
                " is out of range; use a block size from 1 to 1048576 (64 is a good default)");
  }
  auto impl = std::make_shared<detail::DistContext>();
  MPI_Comm_rank(user, &impl->rank);
  MPI_Comm_size(user, &impl->size);
  int rows = options.grid_rows, cols = options.grid_cols;
  choose_grid(impl->size, rows, cols);
  if (rows <= 0 || cols <= 0 || rows * cols != impl->size) {
    throw Error("tenex: dist::Context: a " + std::to_string(options.grid_rows) + " x " +
                std::to_string(options.grid_cols) + " process grid does not fit " + std::to_string(impl->size) +
                " ranks; give grid_rows * grid_cols == " + std::to_string(impl->size) + " (or 0 to choose)");
  }
  MPI_Comm_dup(user, &impl->comm);
  impl->prow = rows;
  impl->pcol = cols;
  impl->block = static_cast<int>(options.block_size);
  int handle = Csys2blacs_handle(impl->comm);
  int blacs = handle;
  Cblacs_gridinit(&blacs, "R", rows, cols);
  Cfree_blacs_system_handle(handle);
  impl->blacs = blacs;
  int pr = 0, pc = 0;
  Cblacs_gridinfo(blacs, &pr, &pc, &impl->myrow, &impl->mycol);
  impl_ = std::move(impl);
  detail::set_current_context(impl_);
}

Context::~Context() = default;

int Context::rank() const { return impl_->rank; }
int Context::size() const { return impl_->size; }
int Context::grid_rows() const { return impl_->prow; }
int Context::grid_cols() const { return impl_->pcol; }
int Context::grid_row() const { return impl_->myrow; }
int Context::grid_col() const { return impl_->mycol; }
std::size_t Context::block_size() const { return static_cast<std::size_t>(impl_->block); }
std::string Context::describe() const {
  return std::to_string(impl_->prow) + " x " + std::to_string(impl_->pcol) + " grid, blocks of " +
         std::to_string(impl_->block);
}

bool context_available() { return detail::current_context() != nullptr; }

PhaseTimes phase_times() { return detail::phase_clock(); }
void reset_phase_times() { detail::phase_clock() = PhaseTimes{}; }

}  // namespace tenex::dist
