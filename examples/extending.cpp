// Two user-defined expressions: one written in terms of library expressions, one that adds
// its node to the graph directly with the op table's typed parameters. Both take part in
// evaluation exactly like the library's own classes.
#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include <iostream>

// 1. In terms of other expressions: twice its operand.
template <class T>
class Twice : public tenex::Nary<1, T> {
 public:
  explicit Twice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Twice"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return (2.0 * this->child(0)).add_to_graph(graph);
  }
};

// 2. A node of its own: the upper-left k x k block of a matrix, through a slice node. Its value
//    is not labelled like its operand (k x k, not x's extents): the constructor declares it.
template <class T>
class LeadingBlock : public tenex::Nary<1, T> {
 public:
  LeadingBlock(const tenex::Expression<T>& x, std::size_t k) : tenex::Nary<1, T>(x.labels(), {k, k}, x), k_(k) {}
  std::string_view name() const override { return "LeadingBlock"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    const tenex::NodeId x = this->child(0).add_to_graph(graph);
    return graph.add(tenex::SliceParams{{0, 0}, {k_, k_}}, {x});  // labels and extents from the shape rule
  }

 private:
  std::size_t k_;
};

int main() {
  tenex::Tensor<double> x(tenex::Shape{2}, {1, 2}), z;
  z("i") = Twice<tenex::Tensor<double>>(x("i"));
  std::cout << z.at(0) << " " << z.at(1) << "\n";  // 2 4

  tenex::Tensor<double> a(tenex::Shape{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), b;
  b("i,j") = LeadingBlock<tenex::Tensor<double>>(a("i,j"), 2);  // the block of a
  std::cout << b.at(0, 0) << " " << b.at(1, 1) << "\n";         // 1 5
  return z.at(1) == 4.0 && b.at(1, 1) == 5.0 ? 0 : 1;
}
