// tenex/ir.hpp — the intermediate representation, for those who extend tenex.
//
// A user expression class that draws its own nodes (docs/extending.md), a tool that reads a
// set's graph, or a test of a pass works on the IR: the OpGraph, its nodes and edges, the op
// table's kinds and typed parameters (TENEX_FOR_EACH_OP), and the element-wise function table
// (TENEX_FOR_EACH_FUNCTION).
//
//   #include <tenex/ir.hpp>
//   tenex::OpGraph g;
//   const tenex::NodeId id = (a("i,k") * b("k,j")).add_to_graph(g);
//   std::string dot = g.to_dot();
//
// The IR may change between minor versions, as the op table grows; the user API of
// tenex/tenex.hpp does not. tenex.hpp does not include this header: it gives the graph as
// an opaque builder (tenex/graph/graph_builder.hpp), which is all a user class that
// overrides add_to_graph(OpGraph&) in terms of other expressions needs.
#pragma once

#include "tenex/graph/functions.hpp"
#include "tenex/graph/op_graph.hpp"
#include "tenex/graph/op_kind.hpp"
#include "tenex/graph/storage_kind.hpp"
