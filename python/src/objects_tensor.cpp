// tenex.Tensor (a view of a numpy array, or memory of its own) and tenex.lazy.
//
// A Tensor with memory holds the numpy array and a tenex::TensorView over it: statements read
// and write the array's elements where they lie. A Tensor made without a shape holds a
// tenex::Tensor until its first result is read; then the numpy array adopts that tensor's
// memory (a capsule keeps the tensor alive) and the Tensor views it like any other.
//
// Sets run with the GIL released: recording a statement may run other sets (writing a view runs
// the sets still reading it), so the assignment, the waits and the destruction of the last
// handles all happen in gil_scoped_release blocks that touch no Python object.
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "objects.hpp"

namespace tenex_python {

namespace {

template <class T>
struct Holder {
  std::unique_ptr<tenex::TensorView<T>> view;  // over the array, once the Tensor has one
  std::unique_ptr<tenex::Tensor<T>> owned;     // before that: the results of a Tensor made without shape
};

class PyTensor {
 public:
  Dtype dtype;
  py::object array = py::none();  // the numpy array viewed; None until the Tensor has memory
  bool readonly = false;
  bool copied = false;      // the array given was copied (negative strides, misaligned)
  bool dtype_given = true;  // false for Tensor() with no dtype: the first result's dtype is taken
  std::variant<Holder<float>, Holder<double>, Holder<std::complex<float>>, Holder<std::complex<double>>> holder;

  explicit PyTensor(Dtype d) { reset(d); }

  // No value, of element type d.
  void reset(Dtype d) {
    dtype = d;
    with_dtype(d, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Holder<T> h;
      h.owned = std::make_unique<tenex::Tensor<T>>();
      holder = std::move(h);
    });
  }

  template <class T>
  Holder<T>& held() {
    return std::get<Holder<T>>(holder);
  }

  // Views `a` (its dtype must be this Tensor's; the strides usable as elements).
  void view_array(py::array a) {
    with_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<std::size_t> strides;
      for (py::ssize_t d = 0; d < a.ndim(); ++d) strides.push_back(static_cast<std::size_t>(a.strides(d)) / sizeof(T));
      // The view writes only when the array is writeable (checked before every assignment).
      T* data = static_cast<T*>(const_cast<void*>(a.data()));
      Holder<T>& h = held<T>();
      h.view = std::make_unique<tenex::TensorView<T>>(data, shape_of(a), strides);
      h.owned.reset();
    });
    array = std::move(a);
  }

  bool has_value() {
    if (!array.is_none()) return true;
    return with_dtype(dtype, [&](auto tag) { return held<typename decltype(tag)::type>().owned->has_value(); });
  }

  // Runs the sets that write (or read) this Tensor. C++ only: called with the GIL released.
  void wait_released() {
    with_dtype(dtype, [&](auto tag) {
      Holder<typename decltype(tag)::type>& h = held<typename decltype(tag)::type>();
      if (h.view) {
        h.view->wait();
      } else if (h.owned->has_value()) {
        h.owned->wait();
      }
    });
  }

  // Gives a Tensor made without shape the memory of its evaluated result (GIL held).
  void adopt() {
    if (!array.is_none()) return;
    with_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Holder<T>& h = held<T>();
      if (!h.owned->has_value() || h.owned->pending()) return;
      // A failed set's error is rethrown here, and the Tensor keeps it: every read raises.
      static_cast<const tenex::Tensor<T>&>(*h.owned).data();
      auto tensor = std::make_shared<tenex::Tensor<T>>(std::move(*h.owned));
      T* data = tensor->data();  // this tensor's alone from now on: nothing else reaches it
      std::vector<py::ssize_t> extents, strides;
      const tenex::Shape& shape = tensor->shape();
      py::ssize_t step = sizeof(T);
      for (std::size_t d = shape.rank(); d-- > 0;) {
        strides.insert(strides.begin(), step);
        step *= static_cast<py::ssize_t>(shape.extent(d));
      }
      for (std::size_t d = 0; d < shape.rank(); ++d) extents.push_back(static_cast<py::ssize_t>(shape.extent(d)));
      py::capsule owner(new std::shared_ptr<tenex::Tensor<T>>(tensor),
                        [](void* p) { delete static_cast<std::shared_ptr<tenex::Tensor<T>>*>(p); });
      py::array_t<T> a(extents, strides, data, owner);
      h.view = std::make_unique<tenex::TensorView<T>>(data, shape);
      h.owned.reset();
      array = std::move(a);
    });
  }

  // The expression t[labels].
  Expr indexed(py::object self, const std::string& labels) {
    if (!has_value()) {
      throw py::value_error("tenex: Tensor[\"" + labels +
                            "\"]: this Tensor has no value yet (made without shape): assign to it first");
    }
    return with_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Holder<T>& h = held<T>();
      if (h.view) return make_expr((*h.view)(labels), {self});
      return make_expr((*h.owned)(labels), {self});
    });
  }
};

// Recorded statements not run yet: their C++ target handles keep their sets open.
struct Pending {
  std::vector<std::shared_ptr<void>> statements;
  std::vector<PyTensor*> targets;  // alive through `keep`
  std::vector<py::object> keep;    // the Tensors read and written

  void add(std::shared_ptr<void> statement, PyTensor& target, py::object self, const std::vector<py::object>& read) {
    statements.push_back(std::move(statement));
    targets.push_back(&target);
    keep.push_back(std::move(self));
    keep.insert(keep.end(), read.begin(), read.end());
  }

  // Runs the statements in order (GIL released: the last handles go, then every target is
  // waited for) and returns the first error; all run whatever fails. GIL held on entry.
  std::exception_ptr run() {
    std::vector<std::shared_ptr<void>> handles = std::move(statements);
    statements.clear();
    std::exception_ptr error;
    {
      py::gil_scoped_release release;
      for (std::shared_ptr<void>& statement : handles) statement.reset();
      for (PyTensor* target : targets) {
        try {
          target->wait_released();
        } catch (...) {
          if (!error) error = std::current_exception();
        }
      }
    }
    for (PyTensor* target : targets) {
      try {
        target->adopt();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    targets.clear();
    keep.clear();
    return error;
  }
};

// The statements of the `with tenex.lazy():` blocks of this thread (nested blocks join the
// outermost), run when the outermost ends.
struct LazyBlock {
  int depth = 0;
  Pending pending;
};

thread_local LazyBlock lazy_block;

}  // namespace

// The factors of one decomposition (eigen_solve, qr, svd) assigned one after another outside
// lazy(): they run together, one decomposition, when the last is assigned, or when the factors
// are dropped (GIL held then: Python drops them).
struct Group {
  std::size_t members = 0;
  std::size_t assigned = 0;
  Pending pending;

  ~Group() {
    if (pending.statements.empty()) return;
    try {
      (void)pending.run();  // an error stays in the results: every read raises it
    } catch (...) {
    }
  }
};

std::shared_ptr<Group> make_group(std::size_t members) {
  auto group = std::make_shared<Group>();
  group->members = members;
  return group;
}

namespace {

// Records `target[labels] = value` (waits for it outside lazy()).
void assign(PyTensor& target, py::object self, const std::string& labels, const Expr& value) {
  if (target.readonly) {
    throw py::value_error("tenex: Tensor[\"" + labels + "\"] = ...: the Tensor views a read-only numpy array");
  }
  const bool takes_dtype = !target.dtype_given && !target.has_value();
  if (!takes_dtype && value.dtype() != target.dtype && promoted(value.dtype(), target.dtype) != target.dtype) {
    throw py::type_error("tenex: a " + dtype_text(value.dtype()) + " expression cannot be assigned to a " +
                         dtype_text(target.dtype) + " Tensor (tenex promotes float32 to float64 and real to complex " +
                         "only; cast it with tenex.cast, or take tenex.real, imag, abs or arg)");
  }
  if (!target.dtype_given && !target.has_value()) target.reset(value.dtype());
  const Expr rhs = cast_to(value, target.dtype);
  const bool lazy = lazy_block.depth > 0;
  const bool grouped = !lazy && value.group != nullptr;
  std::shared_ptr<void> statement;
  {
    py::gil_scoped_release release;
    with_dtype(target.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Holder<T>& h = target.held<T>();
      const auto& x = expression_of<T>(rhs);
      if (h.view) {
        auto indexed = std::make_shared<tenex::Indexed<tenex::TensorView<T>>>((*h.view)(labels));
        *indexed = x;
        statement = indexed;
      } else {
        auto indexed = std::make_shared<tenex::Indexed<tenex::Tensor<T>>>((*h.owned)(labels));
        *indexed = x;
        statement = indexed;
      }
    });
    if (!lazy && !grouped) {
      statement.reset();
      target.wait_released();
    }
  }
  if (lazy) {
    lazy_block.pending.add(std::move(statement), target, std::move(self), rhs.keep);
  } else if (grouped) {
    Group& group = *value.group;
    group.pending.add(std::move(statement), target, std::move(self), rhs.keep);
    if (++group.assigned >= group.members) {
      if (std::exception_ptr error = group.pending.run()) std::rethrow_exception(error);
    }
  } else {
    target.adopt();
  }
}

// Ends the outermost lazy block: runs its statements; the first error is raised after all have run.
void run_lazy_block() {
  Pending pending = std::move(lazy_block.pending);
  lazy_block = LazyBlock{};
  if (std::exception_ptr error = pending.run()) std::rethrow_exception(error);
}

class Lazy {
 public:
  void enter() { ++lazy_block.depth; }
  void exit() {
    if (lazy_block.depth == 0) return;
    if (--lazy_block.depth == 0) run_lazy_block();
  }
};

py::array ready_array(PyTensor& t) {
  if (!t.has_value())
    throw py::value_error("tenex: this Tensor has no value yet (made without shape): assign to it first");
  {
    py::gil_scoped_release release;
    t.wait_released();
  }
  t.adopt();
  return t.array;
}

/// The one element of a Tensor as a numpy scalar, for float() and complex(); a TypeError
/// naming the shape where there are more or none.
py::object scalar_of(PyTensor& t, const char* to) {
  py::array a = ready_array(t);
  if (a.size() != 1) {
    throw py::type_error(std::string("tenex: only a Tensor of one element converts to ") + to + "; this one has shape " +
                         py::str(a.attr("shape")).cast<std::string>());
  }
  return a.attr("reshape")(py::tuple()).attr("item")();  // a Python float or complex
}

py::tuple shape_tuple(PyTensor& t) {
  if (!t.array.is_none()) return py::tuple(t.array.attr("shape"));
  return with_dtype(t.dtype, [&](auto tag) -> py::tuple {
    const auto& owned = *t.held<typename decltype(tag)::type>().owned;
    if (!owned.has_value()) return py::tuple();
    const tenex::Shape& shape = owned.shape();
    py::tuple result(shape.rank());
    for (std::size_t d = 0; d < shape.rank(); ++d) result[d] = py::int_(shape.extent(d));
    return result;
  });
}

// `array` as tenex can view it: its own dtype kept (one of the four), copied into a new
// C-ordered array when a stride is negative or not a multiple of the element size, or the data
// is misaligned.
py::array viewable(const py::array& array, bool& copied) {
  const std::size_t item = static_cast<std::size_t>(array.itemsize());
  const std::size_t alignment =
      with_dtype(dtype_of(array), [](auto tag) { return alignof(typename decltype(tag)::type); });
  bool usable = reinterpret_cast<std::uintptr_t>(array.data()) % alignment == 0;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) {
    const py::ssize_t stride = array.strides(d);
    if (stride < 0 || static_cast<std::size_t>(stride) % item != 0) usable = false;
  }
  copied = !usable;
  if (usable) return array;
  return py::module_::import("numpy").attr("array")(array, py::arg("copy") = true, py::arg("order") = "C");
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<PyTensor> tensor(m, "Tensor",
                              "A tensor over a numpy array's memory (no copy), or over memory of its own; "
                              "t[\"i,j\"] is an expression, t[\"i,j\"] = expr records a statement");
  tensor.attr("__array_ufunc__") = py::none();
  tensor
      .def(py::init([](const py::object& source, const py::object& dtype) {
             if (source.is_none()) {
               auto t = std::make_unique<PyTensor>(dtype.is_none() ? Dtype::float64 : dtype_from(dtype));
               t->dtype_given = !dtype.is_none();
               return t;
             }
             if (py::isinstance<py::array>(source)) {
               py::array array = source.cast<py::array>();
               const Dtype d = dtype_of(array);
               if (!dtype.is_none() && dtype_from(dtype) != d) {
                 throw py::type_error("tenex: Tensor(array, dtype=" + dtype_text(dtype_from(dtype)) +
                                      "): the array is " + dtype_text(d) +
                                      "; convert it first (array.astype) to view it");
               }
               auto t = std::make_unique<PyTensor>(d);
               const bool writeable = array.writeable();
               py::array viewed = viewable(array, t->copied);
               t->readonly = !writeable;  // a copy of a read-only array stays read-only
               t->view_array(std::move(viewed));
               return t;
             }
             // A shape: an int or a sequence of ints; zero-filled memory of its own.
             std::vector<py::ssize_t> extents;
             if (py::isinstance<py::int_>(source)) {
               extents.push_back(source.cast<py::ssize_t>());
             } else {
               for (const py::handle e : source)
                 extents.push_back(py::reinterpret_borrow<py::object>(e).cast<py::ssize_t>());
             }
             for (py::ssize_t e : extents) {
               if (e < 0) throw py::value_error("tenex: Tensor(shape): negative extent " + std::to_string(e));
             }
             const Dtype d = dtype.is_none() ? Dtype::float64 : dtype_from(dtype);
             auto t = std::make_unique<PyTensor>(d);
             t->view_array(py::module_::import("numpy").attr("zeros")(py::tuple(py::cast(extents)), numpy_dtype(d)));
             return t;
           }),
           py::arg("source") = py::none(), py::arg("dtype") = py::none(),
           "Tensor(array) views a numpy array (float32, float64, complex64, complex128) without copying; "
           "Tensor(shape, dtype=numpy.float64) owns zeroed memory; Tensor(dtype=...) has no shape until its "
           "first assignment")
      .def_property_readonly("shape", &shape_tuple, "The extents (an empty tuple while the Tensor has no value)")
      .def_property_readonly("dtype", [](const PyTensor& t) { return numpy_dtype(t.dtype); })
      .def(
          "__dlpack__",
          [](PyTensor& t, const py::object& stream) {
            if (!stream.is_none()) throw py::value_error("tenex: Tensor.__dlpack__: a CPU tensor takes no stream");
            return ready_array(t).attr("__dlpack__")();
          },
          py::arg("stream") = py::none(),
          "A DLPack capsule of the Tensor's memory (no copy), after waiting for a pending result")
      .def(
          "__dlpack_device__", [](PyTensor&) { return py::make_tuple(1, 0); }, "(kDLCPU, 0)")
      .def(
          "__reduce__",
          [](py::object self) {
            // Pickled (and deep-copied) as its values: Tensor(array), the array pickled by numpy.
            py::array a = ready_array(self.cast<PyTensor&>());
            return py::make_tuple(self.attr("__class__"), py::make_tuple(a.attr("copy")()));
          },
          "Pickles as Tensor(a copy of its values); copy.deepcopy gives a Tensor of its own memory")
      .def_property_readonly(
          "ndim", [](PyTensor& t) { return py::len(shape_tuple(t)); }, "The rank (0 while the Tensor has no value)")
      .def_property_readonly(
          "size",
          [](PyTensor& t) {
            std::size_t n = t.has_value() ? 1 : 0;
            for (py::handle e : shape_tuple(t)) n *= e.cast<std::size_t>();
            return n;
          },
          "The number of elements, numpy's size (0 while the Tensor has no value)")
      .def(
          "__len__",
          [](PyTensor& t) {
            const py::tuple shape = shape_tuple(t);
            if (py::len(shape) == 0) throw py::type_error("len() of a rank-0 tenex.Tensor (or one without a value)");
            return shape[0].cast<std::size_t>();
          },
          "The first extent, as numpy's len(); TypeError for rank 0")
      .def(
          "__float__",
          [](PyTensor& t) {
            py::object v = scalar_of(t, "float");
            if (PyComplex_Check(v.ptr())) {
              throw py::type_error("tenex: float() of a complex Tensor; take complex() of it, or its real part");
            }
            return py::float_(v);
          },
          "The value of a rank-0 Tensor (or of one element); waits for its set")
      .def(
          "__complex__",
          [](PyTensor& t) { return py::module_::import("builtins").attr("complex")(scalar_of(t, "complex")); },
          "The value of a rank-0 Tensor (or of one element); waits for its set")
      .def_property_readonly(
          "copied", [](const PyTensor& t) { return t.copied; },
          "True when the array given could not be viewed (negative strides, misaligned) and "
          "the Tensor holds a C-ordered copy of it")
      .def_property_readonly("pending",
                             [](PyTensor& t) {
                               return with_dtype(t.dtype, [&](auto tag) {
                                 auto& h = t.held<typename decltype(tag)::type>();
                                 return h.view ? h.view->pending() : h.owned->pending();
                               });
                             })
      .def("numpy", &ready_array, "The numpy array holding the Tensor's elements (no copy); waits for its set")
      .def(
          "__array__",
          [](PyTensor& t, const py::object& dtype) -> py::object {
            py::array a = ready_array(t);
            if (dtype.is_none()) return a;
            return a.attr("astype")(dtype, py::arg("copy") = false);
          },
          py::arg("dtype") = py::none())
      .def("wait",
           [](PyTensor& t) {
             {
               py::gil_scoped_release release;
               t.wait_released();
             }
             t.adopt();
           })
      .def("__getitem__",
           [](py::object self, const std::string& labels) { return self.cast<PyTensor&>().indexed(self, labels); })
      .def("__setitem__", [](py::object self, const std::string& labels,
                             const Expr& value) { assign(self.cast<PyTensor&>(), self, labels, value); })
      .def("__repr__", [](PyTensor& t) {
        return "tenex.Tensor(shape=" + py::str(shape_tuple(t)).cast<std::string>() + ", dtype=" + dtype_text(t.dtype) +
               ")";
      });

  py::class_<Lazy>(m, "lazy", "with tenex.lazy(): records the block's statements and runs them, in order, at its end")
      .def(py::init<>())
      .def("__enter__",
           [](Lazy& l) -> Lazy& {
             l.enter();
             return l;
           })
      .def("__exit__", [](Lazy& l, const py::args&) {
        l.exit();
        return false;
      });
}

}  // namespace tenex_python
