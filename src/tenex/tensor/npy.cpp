// numpy's .npy format (numpy/lib/format.py documents it): the magic "\x93NUMPY", a major and
// a minor version byte, the header's length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and
// 3.0), then the header, a Python dict literal padded with spaces to a multiple of 64 bytes
// and ended by '\n':
//   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// then the elements, in C or Fortran order.
#include "tenex/tensor/npy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/error.hpp"

namespace tenex {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlign = 64;  // numpy pads the header so the data starts on 64 bytes

// numpy's type string of T, little-endian.
template <class T>
constexpr std::string_view descr_of() {
  if constexpr (std::is_same_v<T, float>) return "<f4";
  if constexpr (std::is_same_v<T, double>) return "<f8";
  if constexpr (std::is_same_v<T, std::complex<float>>) return "<c8";
  if constexpr (std::is_same_v<T, std::complex<double>>) return "<c16";
}

// The element type a descr names, in the words of the error messages.
std::string type_name(std::string_view descr) {
  if (descr.size() >= 2 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '|' || descr[0] == '>')) {
    const std::string_view code = descr.substr(1);
    const std::string order = descr[0] == '>' ? "big-endian " : "";
    if (code == "f4") return order + "float32";
    if (code == "f8") return order + "float64";
    if (code == "c8") return order + "complex64";
    if (code == "c16") return order + "complex128";
    if (code == "f2") return order + "float16";
  }
  return "numpy type '" + std::string(descr) + "'";
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("tenex: load_npy: " + path + ": " + what);
}

// A minimal reader of the header's dict literal: the three keys numpy writes, in any order.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran, std::vector<std::size_t>& shape) {
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        has_order = true;
      } else if (key == "shape") {
        shape = tuple();
        has_shape = true;
      } else {
        fail(path_, "the header has an unknown key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail(path_, "the header is not a dict literal (expected ',' or '}')");
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail(path_, "the header has text after its dict");
    if (!has_descr || !has_order || !has_shape) {
      fail(path_, "the header lacks one of 'descr', 'fortran_order' and 'shape'");
    }
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(path_, std::string("the header is not numpy's (expected '") + c + "')");
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(path_, "the header is not numpy's (expected a quoted string)");
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail(path_, "the header has an unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail(path_, "'fortran_order' is neither True nor False");
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> values;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      std::size_t value = 0;
      bool digits = false;
      while (peek() >= '0' && peek() <= '9') {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail(path_, "an extent overflows");
        value = value * 10 + digit;
        digits = true;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2's long literals
      if (!digits) fail(path_, "'shape' is not a tuple of non-negative integers");
      values.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        fail(path_, "'shape' is not a tuple of non-negative integers");
      }
    }
    expect(')');
    return values;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

std::string header_of(std::string_view descr, const std::vector<std::size_t>& extents) {
  std::string shape = "(";
  for (std::size_t d = 0; d < extents.size(); ++d) {
    if (d > 0) shape += ", ";
    shape += std::to_string(extents[d]);
  }
  if (extents.size() == 1) shape += ",";
  shape += ")";
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': ";
  dict += shape;
  dict += ", }";
  return dict;
}

// Writes all of `bytes` to `fd`; false on an error (errno says which).
bool write_all(int fd, const char* bytes, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

}  // namespace

template <class T>
void save_npy(const std::string& path, const Tensor<T>& tensor) {
  const std::vector<std::size_t>& extents = tensor.shape().extents();
  const T* data = tensor.data();  // waits for a pending set (and throws its error)
  const std::string dict = header_of(descr_of<T>(), extents);
  // The preamble (magic, version, length) of 1.0 is 10 bytes, of 2.0 12; 1.0's length is 16-bit.
  auto padded_size = [&](std::size_t preamble) { return (preamble + dict.size() + 1 + kAlign - 1) / kAlign * kAlign; };
  const bool v1 = padded_size(10) - 10 <= 0xffff;
  const std::size_t preamble = v1 ? 10 : 12;
  const std::size_t padded = padded_size(preamble);
  const std::size_t header_len = padded - preamble;
  std::string head(kMagic);
  head += static_cast<char>(v1 ? 1 : 2);
  head += '\0';
  for (std::size_t b = 0; b < (v1 ? 2U : 4U); ++b) head += static_cast<char>((header_len >> (8 * b)) & 0xff);
  head += dict;
  head.append(padded - head.size() - 1, ' ');
  head += '\n';

  // A temporary file beside `path`, renamed over it once complete.
  std::string temporary = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    throw Error("tenex: save_npy: " + path + ": cannot create a temporary file beside it: " + std::strerror(errno));
  }
  const bool written = write_all(fd, head.data(), head.size()) &&
                       write_all(fd, reinterpret_cast<const char*>(data), tensor.size() * sizeof(T));
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  const int close_errno = errno;
  if (!written || !closed) {
    ::unlink(temporary.c_str());
    throw Error("tenex: save_npy: " + path + ": cannot write: " + std::strerror(!written ? write_errno : close_errno));
  }
  // mkstemp makes the file 0600; give it the permissions a new file gets (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temporary.c_str(), 0666 & ~mask);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temporary.c_str());
    throw Error("tenex: save_npy: " + path + ": cannot replace it: " + std::strerror(rename_errno));
  }
}

template <class T>
Tensor<T> load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open it: ") + std::strerror(errno));
  // Reads exactly `size` bytes or says what is missing.
  auto read = [&](char* into, std::size_t size, const char* part) {
    in.read(into, static_cast<std::streamsize>(size));
    if (static_cast<std::size_t>(in.gcount()) != size) {
      if (in.bad()) fail(path, "cannot read it");
      fail(path, std::string("truncated in its ") + part);
    }
  };
  char preamble[12];
  in.read(preamble, 8);
  if (in.gcount() < 8 || std::string_view(preamble, kMagic.size()) != kMagic) {
    fail(path, "not a .npy file (no \\x93NUMPY magic)");
  }
  const auto major = static_cast<unsigned char>(preamble[6]);
  if (major < 1 || major > 3) fail(path, "format version " + std::to_string(major) + " is not 1, 2 or 3");
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  read(preamble + 8, length_bytes, "header");
  std::size_t header_len = 0;
  for (std::size_t b = 0; b < length_bytes; ++b) {
    header_len |= static_cast<std::size_t>(static_cast<unsigned char>(preamble[8 + b])) << (8 * b);
  }
  if (header_len > (std::size_t{1} << 24)) fail(path, "its header length " + std::to_string(header_len) + " is absurd");
  std::string header(header_len, '\0');
  read(header.data(), header_len, "header");
  std::string descr;
  bool fortran = false;
  std::vector<std::size_t> extents;
  HeaderParser(header, path).parse(descr, fortran, extents);
  if (descr != descr_of<T>() && !(descr.size() > 1 && descr[0] == '=' && descr.substr(1) == descr_of<T>().substr(1))) {
    fail(path, "holds " + type_name(descr) + " elements, not " + type_name(descr_of<T>()));
  }
  std::size_t count = 1;
  for (std::size_t e : extents) {
    if (e != 0 && count > std::numeric_limits<std::size_t>::max() / sizeof(T) / e) fail(path, "its shape overflows");
    count *= e;
  }
  // The data's size against what is left of the file, before any allocation of that size.
  const std::streamoff here = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  in.seekg(here);
  if (here < 0 || end < here || !in) fail(path, "cannot read it");
  const auto available = static_cast<std::size_t>(end - here);
  const std::size_t data_bytes = count * sizeof(T);
  if (available < data_bytes) {
    fail(path, "truncated: its shape needs " + std::to_string(data_bytes) + " bytes of data, it has " +
                   std::to_string(available));
  }
  if (available > data_bytes) {
    fail(path, std::to_string(available - data_bytes) + " bytes follow the data its shape describes");
  }
  std::vector<T> values(count);
  if (count > 0) read(reinterpret_cast<char*>(values.data()), data_bytes, "data");
  if (fortran && extents.size() > 1) {
    // Column-major to row-major: the element at row-major index (i0, ..., in-1) is at
    // column-major offset i0 + e0 (i1 + e1 (...)).
    std::vector<T> row_major(count);
    std::vector<std::size_t> index(extents.size(), 0);
    for (std::size_t flat = 0; flat < count; ++flat) {
      std::size_t offset = 0;
      for (std::size_t d = extents.size(); d-- > 0;) offset = offset * extents[d] + index[d];
      row_major[flat] = values[offset];
      for (std::size_t d = extents.size(); d-- > 0;) {
        if (++index[d] < extents[d]) break;
        index[d] = 0;
      }
    }
    values.swap(row_major);
  }
  return Tensor<T>(Shape(std::move(extents)), std::move(values));
}

#define TENEX_INSTANTIATE_NPY(T)                                             \
  template TENEX_API void save_npy<T>(const std::string&, const Tensor<T>&); \
  template TENEX_API Tensor<T> load_npy<T>(const std::string&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_NPY)
#undef TENEX_INSTANTIATE_NPY

}  // namespace tenex
