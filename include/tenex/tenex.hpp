// tenex/tenex.hpp — everything a tenex user needs.
//
//   #include <tenex/tenex.hpp>
//   tenex::Tensor<double> a({20, 30, 40}), b({40, 30, 50}), c;
//   tenex::fill_random(a, 1);
//   tenex::fill_random(b, 2);
//   c("i,j") = a("i,k,l") * b("l,k,j");      // evaluated at the ';'
#pragma once

#include "tenex/backend/backend.hpp"
#include "tenex/backend_kind.hpp"
#include "tenex/config.hpp"
#include "tenex/contraction_path.hpp"
#include "tenex/error.hpp"
#include "tenex/explain.hpp"
#include "tenex/expression/addition.hpp"
#include "tenex/expression/assign_to.hpp"
#include "tenex/expression/cast.hpp"
#include "tenex/expression/chip.hpp"
#include "tenex/expression/cholesky.hpp"
#include "tenex/expression/division.hpp"
#include "tenex/expression/eigen_solve.hpp"
#include "tenex/expression/elementwise.hpp"
#include "tenex/expression/expression.hpp"
#include "tenex/expression/indexed.hpp"
#include "tenex/expression/indexed_view.hpp"
#include "tenex/expression/inverse.hpp"
#include "tenex/expression/multiplication.hpp"
#include "tenex/expression/permutation.hpp"
#include "tenex/expression/pow.hpp"
#include "tenex/expression/qr.hpp"
#include "tenex/expression/scale.hpp"
#include "tenex/expression/slice.hpp"
#include "tenex/expression/solve.hpp"
#include "tenex/expression/subtraction.hpp"
#include "tenex/expression/svd.hpp"
// The graph as add_to_graph sees it, an opaque builder; the IR itself (OpNode, the op and
// function tables) is for extenders, who include tenex/ir.hpp.
#include "tenex/graph/graph_builder.hpp"
#include "tenex/plans.hpp"
#include "tenex/scalar.hpp"
#include "tenex/solvers/krylov.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/memory.hpp"
#include "tenex/tensor/npy.hpp"
#include "tenex/tensor/shape.hpp"
#include "tenex/tensor/tensor.hpp"
#include "tenex/tensor/tensor_view.hpp"
#include "tenex/truncation.hpp"

// The distributed backend's objects, when this build has it (tenex/dist/).
#include "tenex/config.hpp"
#if TENEX_HAS_DIST
#include "tenex/dist/context.hpp"
#include "tenex/dist/distributed_tensor.hpp"
#endif
