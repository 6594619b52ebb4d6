#include "tenex/graph/op_kind.hpp"

namespace tenex {

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
#define TENEX_OP_KIND_NAME(name, arity) \
  case OpKind::name:                    \
    return #name;
    TENEX_FOR_EACH_OP_KIND(TENEX_OP_KIND_NAME)
#undef TENEX_OP_KIND_NAME
  }
  return "unknown";
}

int op_kind_arity(OpKind kind) {
  switch (kind) {
#define TENEX_OP_KIND_ARITY(name, arity) \
  case OpKind::name:                     \
    return arity;
    TENEX_FOR_EACH_OP_KIND(TENEX_OP_KIND_ARITY)
#undef TENEX_OP_KIND_ARITY
  }
  return -1;
}

}  // namespace tenex
