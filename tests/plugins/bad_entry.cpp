// Backend plugins that the registry must refuse, one per way a plugin can be wrong, built from
// this one file with TENEX_BAD_ENTRY set (tests/plugins/CMakeLists.txt) and loaded by
// tests/backend/test_backend_plugins.cpp: 1, an ABI version the library does not speak; 2, built
// against another minor version of tenex; 3, an op table of another size; 4, a file whose
// entry names another backend; 5, a file that exports no entry.
#include <tenex/backend/plugin.hpp>

#if TENEX_BAD_ENTRY != 5
namespace {
void* make_none(std::uint32_t) { return nullptr; }
}  // namespace

extern "C" __attribute__((visibility("default"))) const TenexBackendPlugin* tenex_backend_plugin_entry(void) {
  static const TenexBackendPlugin entry{TENEX_BAD_ENTRY == 1 ? 999u : TENEX_BACKEND_ABI_VERSION,
                                        TENEX_BAD_ENTRY == 3 ? tenex::plugin::kOpKinds + 1 : tenex::plugin::kOpKinds,
                                        TENEX_BAD_ENTRY == 4 ? "other" : "bad",
                                        TENEX_BAD_ENTRY == 2 ? "0.0.1" : TENEX_VERSION_STRING,
                                        TENEX_ELEMENT_ALL,
                                        nullptr,
                                        &make_none};
  return &entry;
}
#else
extern "C" __attribute__((visibility("default"))) int not_a_plugin(void) { return 0; }
#endif
