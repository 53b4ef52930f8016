// libxml2, loaded (dlopen) the first time something needs it rather than at
// every start of every program that links the discovery library.
//
// gpulaunch reads NCCL topology files with libxml2 (nccl_topology.h); hwloc
// loads it through its own XML plugin once a topology is opened. A launch
// that finds its host in the topology cache (topology_cache.h) does neither,
// and linked at build time libxml2 would still bring ICU, lzma and zlib into
// its start: 2.5 ms of CPU to map and relocate on a 2-core VM
// (docs/benchmarks.md).
//
// Contracts:
// - The functions are libxml2's own, with its signatures and behaviour,
//   resolved from the libxml2 whose headers gpulaunch was built with (the
//   soname follows LIBXML_VERSION: node layouts come from those headers).
// - Loading happens once per process, thread-safely; the library then stays
//   loaded (its nodes and allocations outlive any one call).
#pragma once

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <string>

namespace gpulaunch {

struct Libxml2 {
  decltype(&::xmlNewParserCtxt) NewParserCtxt = nullptr;
  decltype(&::xmlFreeParserCtxt) FreeParserCtxt = nullptr;
  decltype(&::xmlCtxtReadMemory) CtxtReadMemory = nullptr;
  decltype(&::xmlFreeDoc) FreeDoc = nullptr;
  decltype(&::xmlDocGetRootElement) DocGetRootElement = nullptr;
  decltype(&::xmlGetProp) GetProp = nullptr;
  decltype(&::xmlGetLineNo) GetLineNo = nullptr;
  decltype(&::xmlSetStructuredErrorFunc) SetStructuredErrorFunc = nullptr;
  xmlFreeFunc* free_hook = nullptr;  // libxml2's variable xmlFree

  // Releases what GetProp returned, as libxml2's xmlFree does.
  void Free(void* p) const { (*free_hook)(p); }
};

// libxml2's functions, or nullptr when it cannot be loaded; then `why` (when
// given) says which library could not be loaded, why, and what to install.
const Libxml2* LoadLibxml2(std::string* why);

}  // namespace gpulaunch
