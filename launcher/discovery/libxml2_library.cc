#include "launcher/discovery/libxml2_library.h"

#include <dlfcn.h>

#include <type_traits>

namespace gpulaunch {
namespace {

// libxml2 2.14 changed its soname; the headers say which one they describe.
#if LIBXML_VERSION >= 21400
constexpr const char* kSoname = "libxml2.so.16";
#else
constexpr const char* kSoname = "libxml2.so.2";
#endif

struct Loaded {
  Libxml2 api;
  bool ok = false;
  std::string why;
};

Loaded Load() {
  Loaded l;
  void* lib = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    l.why = std::string("cannot load ") + kSoname + " (" + (err ? err : "unknown error") +
            "); reading NCCL topology files needs libxml2: install it (Debian: apt-get install libxml2)";
    return l;
  }
  const char* missing = nullptr;
  auto resolve = [&](const char* name, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(lib, name));
    if (!out && !missing) missing = name;
  };
  Libxml2& a = l.api;
  resolve("xmlNewParserCtxt", a.NewParserCtxt);
  resolve("xmlFreeParserCtxt", a.FreeParserCtxt);
  resolve("xmlCtxtReadMemory", a.CtxtReadMemory);
  resolve("xmlFreeDoc", a.FreeDoc);
  resolve("xmlDocGetRootElement", a.DocGetRootElement);
  resolve("xmlGetProp", a.GetProp);
  resolve("xmlGetLineNo", a.GetLineNo);
  resolve("xmlSetStructuredErrorFunc", a.SetStructuredErrorFunc);
  resolve("xmlFree", a.free_hook);
  if (missing) {
    // It stays loaded: unloading a library whose initialisers ran gains nothing.
    l.why = std::string(kSoname) + " has no " + missing + "; install the libxml2 gpulaunch was built with";
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const Libxml2* LoadLibxml2(std::string* why) {
  static const Loaded loaded = Load();  // once, thread-safely
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace gpulaunch
