// .npy files: round trips in every element type, the bytes numpy writes and reads (numpy's
// format, and numpy itself through the system Python), and every kind of bad file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

namespace {

/// A temporary folder, removed with its contents.
struct Folder {
  std::filesystem::path path;
  Folder() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("tenex-npy-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  ~Folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const char* name) const { return (path / name).string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(std::filesystem::directory_iterator(path), std::filesystem::directory_iterator()));
  }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

/// A .npy file of format `major` with `dict` as its header (padded as numpy pads it) and `data`.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  const std::size_t padded = (preamble + dict.size() + 1 + 63) / 64 * 64;
  const std::size_t header_len = padded - preamble;
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  for (std::size_t b = 0; b < (major == 1 ? 2U : 4U); ++b) bytes += static_cast<char>((header_len >> (8 * b)) & 0xff);
  bytes += dict;
  bytes.append(padded - bytes.size() - 1, ' ');
  bytes += '\n';
  return bytes + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

/// Runs the system Python with numpy on `script`; true when it exits 0.
bool python(const std::string& script, const Folder& folder) {
  const std::string file = folder.file("script.py");
  write_bytes(file, script);
  return std::system(("/usr/bin/python3 " + file + " > " + folder.file("python.log") + " 2>&1").c_str()) == 0;
}

template <class T>
T value_at(std::size_t i) {
  if constexpr (tenex::is_complex_v<T>) {
    using R = typename T::value_type;
    return T(static_cast<R>(i) + R(0.25), -static_cast<R>(i) * R(0.5));
  } else {
    return static_cast<T>(i) + T(0.25);
  }
}

/// Expects `f` to throw tenex::Error whose message names `path` and contains `what`.
template <class F>
void expect_error(F f, const std::string& path, const std::string& what) {
  try {
    f();
    FAIL("no tenex::Error for " << what);
  } catch (const tenex::Error& error) {
    const std::string message = error.what();
    CHECK_MESSAGE(message.find(path) != std::string::npos, message);
    CHECK_MESSAGE(message.find(what) != std::string::npos, message);
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("npy: save and load give back every shape and value", T, npy_round_trip) {
  Folder folder;
  const std::vector<std::vector<std::size_t>> shapes{{}, {5}, {2, 3, 4}, {3, 0, 2}, {1, 1, 7}};
  for (const auto& extents : shapes) {
    tenex::Shape shape(extents);
    std::vector<T> values(shape.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = value_at<T>(i);
    const tenex::Tensor<T> t(shape, values);
    const std::string path = folder.file("t.npy");
    tenex::save_npy(path, t);
    const tenex::Tensor<T> back = tenex::load_npy<T>(path);
    CHECK(back.shape() == shape);
    CHECK(std::vector<T>(back.data(), back.data() + back.size()) == values);
    // The header is padded so that the data starts on 64 bytes, as numpy writes it.
    CHECK((read_bytes(path).size() - values.size() * sizeof(T)) % 64 == 0);
  }
  CHECK(folder.entries() == 1);  // no temporary file left beside it
}
TEST_CASE_TEMPLATE_APPLY(npy_round_trip, tenex_test::AllScalars);

TEST_CASE("npy: the bytes are numpy's format 1.0, and Fortran order and format 2.0 load") {
  Folder folder;
  // numpy.save of numpy.arange(6.0).reshape(2, 3): this header, then the six doubles.
  std::vector<double> six{0, 1, 2, 3, 4, 5};
  tenex::save_npy(folder.file("c.npy"), tenex::Tensor<double>(tenex::Shape{2, 3}, six));
  const std::string expected = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", raw(six));
  CHECK(read_bytes(folder.file("c.npy")) == expected);
  CHECK(expected.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));  // header length 118

  // Fortran order: element (i, j) of a 2 x 3 float32 array at offset i + 2 j.
  const std::vector<float> column_major{0, 3, 1, 4, 2, 5};
  write_bytes(folder.file("f.npy"),
              npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", raw(column_major)));
  const tenex::Tensor<float> f = tenex::load_npy<float>(folder.file("f.npy"));
  CHECK(f.shape() == tenex::Shape{2, 3});
  CHECK(std::vector<float>(f.data(), f.data() + 6) == std::vector<float>{0, 1, 2, 3, 4, 5});

  // Fortran order in three modes, complex, format 2.0, keys in another order.
  const std::vector<std::size_t> e{2, 3, 2};
  std::vector<std::complex<double>> fortran(12);
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 2; ++k) fortran[i + 2 * (j + 3 * k)] = {double(i * 6 + j * 2 + k), double(k)};
    }
  }
  write_bytes(folder.file("z.npy"),
              npy_file("{'shape': (2, 3, 2), 'fortran_order': True, 'descr': '<c16'}", raw(fortran), 2));
  const auto z = tenex::load_npy<std::complex<double>>(folder.file("z.npy"));
  REQUIRE(z.shape() == tenex::Shape{2, 3, 2});
  for (std::size_t x = 0; x < 12; ++x) CHECK(z.data()[x] == std::complex<double>(double(x), double(x % 2)));
}

TEST_CASE("npy: numpy reads what tenex writes and tenex reads what numpy writes") {
  Folder folder;
  tenex::Tensor<double> a(tenex::Shape{3, 4}), doubled;
  tenex::fill_random(a, 5);
  tenex::Tensor<std::complex<float>> z(tenex::Shape{2, 5});
  tenex::fill_random(z, 6);
  tenex::save_npy(folder.file("a.npy"), a);
  tenex::save_npy(folder.file("z.npy"), z);
  const std::string dir = folder.path.string();
  REQUIRE_MESSAGE(python("import numpy as np\n"
                         "a = np.load('" +
                             dir + "/a.npy'); z = np.load('" + dir +
                             "/z.npy')\n"
                             "assert a.dtype == np.float64 and a.shape == (3, 4)\n"
                             "assert z.dtype == np.complex64 and z.shape == (2, 5)\n"
                             "np.save('" +
                             dir +
                             "/a2.npy', np.asfortranarray(2 * a))\n"
                             "np.save('" +
                             dir + "/zt.npy', np.ascontiguousarray(z.T.conj()))\n",
                         folder),
                  "python3 with numpy: " << read_bytes(folder.file("python.log")));
  const auto a2 = tenex::load_npy<double>(folder.file("a2.npy"));
  const auto zt = tenex::load_npy<std::complex<float>>(folder.file("zt.npy"));
  REQUIRE(a2.shape() == tenex::Shape{3, 4});
  REQUIRE(zt.shape() == tenex::Shape{5, 2});
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) CHECK(a2.data()[i * 4 + j] == 2 * a.data()[i * 4 + j]);
  }
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 5; ++j) CHECK(zt.data()[j * 2 + i] == std::conj(z.data()[i * 5 + j]));
  }
}

TEST_CASE("npy: a bad file is a tenex::Error naming the path and the fault") {
  Folder folder;
  const std::string path = folder.file("bad.npy");
  const std::vector<double> four{1, 2, 3, 4};
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  auto load_after = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    return [&] { (void)tenex::load_npy<double>(path); };
  };
  expect_error([&] { (void)tenex::load_npy<double>(folder.file("missing.npy")); }, folder.file("missing.npy"),
               "cannot open");
  expect_error(load_after("hello, world"), path, "not a .npy file");
  expect_error(load_after(std::string("\x93NUMPY\x07\x00", 8)), path, "format version 7");
  expect_error(load_after(npy_file(dict, raw(four)).substr(0, 40)), path, "truncated in its header");
  expect_error(load_after(npy_file(dict, raw(four)).substr(0, 128 + 20)), path, "truncated");
  expect_error(load_after(npy_file(dict, raw(four) + "x")), path, "1 bytes follow the data");
  expect_error(load_after(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", raw(four))), path,
               "holds float32 elements, not float64");
  expect_error(load_after(npy_file("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }", raw(four))), path,
               "big-endian float64");
  expect_error(load_after(npy_file("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2, 2), }", raw(four))), path,
               "fortran_order");
  expect_error(load_after(npy_file("{'descr': '<f8', 'shape': (2, -2), 'fortran_order': False}", raw(four))), path,
               "'shape' is not a tuple");
  expect_error(load_after(npy_file("{'descr': '<f8', 'shape': (2, 2)}", raw(four))), path, "lacks");
  expect_error(load_after(npy_file("[1, 2]", raw(four))), path, "not numpy's");
  expect_error(
      load_after(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9999), }", "")),
      path, "overflows");
  // The complex file is not loaded as real, nor the other way round.
  tenex::save_npy(path, tenex::Tensor<std::complex<double>>(tenex::Shape{2}, {{1, 2}, {3, 4}}));
  expect_error([&] { (void)tenex::load_npy<double>(path); }, path, "holds complex128 elements, not float64");
}

TEST_CASE("npy: a save that fails leaves the file as it was") {
  Folder folder;
  const std::string path = folder.file("x.npy");
  const tenex::Tensor<double> old(tenex::Shape{2}, {1.0, 2.0});
  tenex::save_npy(path, old);
  const std::string before = read_bytes(path);

  // A tensor whose set fails when read: the Cholesky factor of a matrix that is not positive definite.
  tenex::Tensor<double> a(tenex::Shape{2, 2}, {1.0, 2.0, 2.0, 1.0}), l;
  l("i,j") = tenex::cholesky(a("i,j"));
  CHECK_THROWS_AS(tenex::save_npy(path, l), tenex::NumericalError);
  CHECK(read_bytes(path) == before);
  CHECK(folder.entries() == 1);

  // A folder that does not exist.
  const std::string nowhere = folder.file("no/such/folder/x.npy");
  expect_error([&] { tenex::save_npy(nowhere, old); }, nowhere, "cannot create a temporary file");
  CHECK(folder.entries() == 1);

  // A pending result is written once its set has run.
  tenex::Tensor<double> b(tenex::Shape{2, 2}, {1, 2, 3, 4}), c;
  c("i,j") = b("j,i");
  tenex::save_npy(path, c);
  const auto back = tenex::load_npy<double>(path);
  CHECK(std::vector<double>(back.data(), back.data() + 4) == std::vector<double>{1, 3, 2, 4});
}
