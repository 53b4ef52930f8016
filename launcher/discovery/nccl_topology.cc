#include "launcher/discovery/nccl_topology.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr const char* kKnownElements = "system, cpu, pci, gpu, nic, net, nvlink, xgmi";

std::string Name(xmlNodePtr n) { return reinterpret_cast<const char*>(n->name); }

bool IsElement(xmlNodePtr n) { return n->type == XML_ELEMENT_NODE; }

std::string Attr(xmlNodePtr n, const char* name) {
  xmlChar* v = xmlGetProp(n, reinterpret_cast<const xmlChar*>(name));
  if (!v) return "";
  std::string out = reinterpret_cast<const char*>(v);
  xmlFree(v);
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "0x030200" -> 0x030200; nullopt unless hex digits after an optional 0x.
std::optional<unsigned long> Hex(const std::string& text) {
  std::string s = Lower(text);
  if (s.rfind("0x", 0) == 0) s = s.substr(2);
  if (s.empty() || s.size() > 8 || s.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return std::stoul(s, nullptr, 16);
}

// Linux cpumask text, most significant 32-bit word first: "000000ff,ffff0000";
// at most 65,536 CPUs (Linux's own NR_CPUS limit is 8,192).
std::optional<std::vector<int>> CpuMask(const std::string& text) {
  const std::vector<std::string> words = Split(text, ',');
  if (words.size() > 2048) return std::nullopt;
  std::vector<int> pus;
  for (size_t w = 0; w < words.size(); ++w) {
    const auto bits = Hex(words[w]);
    if (!bits || words[w].empty()) return std::nullopt;
    const int base = static_cast<int>(32 * (words.size() - 1 - w));
    for (int b = 0; b < 32; ++b)
      if ((*bits >> b) & 1) pus.push_back(base + b);
  }
  std::sort(pus.begin(), pus.end());
  return pus;
}

std::string VendorName(unsigned long id) {
  switch (id) {
    case 0x10de: return "nvidia";
    case 0x1002: return "amd";
    case 0x8086: return "intel";
    default: return "unknown";
  }
}

// NCCL's per-link NVLink bandwidth by SM version (GB/s, src/graph/topo.h).
double NvlinkPerLink(int sm) {
  if (sm <= 0) return 20.0;
  if (sm < 70) return 18.0;
  if (sm >= 86 && sm < 90) return 12.0;
  if (sm < 90) return 20.0;
  if (sm < 100) return 20.6;
  return 40.1;
}

// RCCL's per-link xGMI bandwidth by gcn architecture (GB/s, src/graph/topo.h).
double XgmiPerLink(const std::string& gcn) {
  if (gcn.rfind("gfx90a", 0) == 0) return 36.0;
  if (gcn.rfind("gfx94", 0) == 0 || gcn.rfind("gfx95", 0) == 0) return 48.0;
  return 24.0;
}

// UCX's name for an RDMA port ("mlx5_0:1"); IP interfaces keep their name.
std::string NicName(const std::string& name, const std::string& port) {
  if (name.find(':') != std::string::npos) return name;
  for (const char* ip : {"eth", "en", "ib", "bond", "hsi", "cxi"})
    if (name.rfind(ip, 0) == 0) return name;
  return name + ":" + (port.empty() || port == "0" ? "1" : port);
}

std::string NicKind(const std::string& name, unsigned long pci_class, unsigned long vendor) {
  if (name.rfind("rdmap", 0) == 0 || name.rfind("efa", 0) == 0 || vendor == 0x1d0f) return "efa";
  if (name.rfind("hsi", 0) == 0 || name.rfind("cxi", 0) == 0) return "slingshot";
  if (name.rfind("mlx", 0) == 0 || name.rfind("ib", 0) == 0 || name.rfind("bnxt_re", 0) == 0 ||
      (pci_class >> 8) == 0x0207) {
    return "infiniband";
  }
  return "ethernet";
}

struct Link {
  std::string from, target;  // bus ids
  double gbps;
  bool to_switch;
};

class Loader {
 public:
  explicit Loader(const std::string& origin) : origin_(origin) {}

  Status Error(xmlNodePtr at, const std::string& what) const {
    return InvalidArgument(origin_ + ":" + std::to_string(xmlGetLineNo(at)) + ": " + what);
  }

  StatusOr<HostTopology> Load(xmlNodePtr root) {
    if (Name(root) == "graphs" || Name(root) == "graph") {
      return Error(root, "an NCCL graph file (NCCL_GRAPH_FILE), not a topology; give the NCCL_TOPO_FILE (<system>)");
    }
    if (Name(root) != "system") {
      return Error(root, "<" + Name(root) + "> is not an NCCL topology (its root is <system>) nor hwloc XML (<topology>)");
    }
    for (xmlNodePtr c = root->children; c; c = c->next) {
      if (!IsElement(c)) continue;
      if (Name(c) != "cpu") return Unknown(c, "<system> holds <cpu> elements");
      GL_RETURN_IF_ERROR(Cpu(c));
    }
    if (t_.gpus.empty()) {
      return Error(root, "describes no GPU (no <gpu> and no PCI device of a GPU class): a fragment that NCCL completes "
                         "from the live machine cannot describe a host; record the whole topology (NCCL_TOPO_DUMP_FILE)");
    }
    if (no_affinity_) return *no_affinity_;
    Finish();
    return std::move(t_);
  }

 private:
  Status Unknown(xmlNodePtr at, const std::string& where) const {
    return Error(at, "unexpected element <" + Name(at) + "> (" + where + "; an NCCL topology holds " + kKnownElements +
                         ")");
  }

  Status Cpu(xmlNodePtr cpu) {
    const std::string numa_text = Attr(cpu, "numaid");
    int numa = -1;
    if (!ParseInt(numa_text, numa) || numa < 0 || numa > 4095) {
      return Error(cpu, "<cpu> needs numaid=\"N\" (a NUMA node number), not \"" + numa_text + "\"");
    }
    if (!numas_.insert(numa).second) return Error(cpu, "numaid=\"" + numa_text + "\" appears twice");
    const std::string affinity = Attr(cpu, "affinity");
    auto pus = CpuMask(affinity);
    if (!pus || pus->empty()) {
      // Reported after the walk: a fragment without GPUs says so first.
      if (!no_affinity_) {
        no_affinity_ = Error(cpu, "<cpu numaid=\"" + numa_text + "\"> needs affinity=\"hex cpumask\" (like "
                                  "0000ffff,ffffffff) naming its CPUs, not \"" + affinity + "\"; gpulaunch binds ranks to them");
      }
      pus = std::vector<int>{};
    }
    for (int pu : *pus) {
      if (!pus_seen_.insert(pu).second) return Error(cpu, "CPU " + std::to_string(pu) + " is in two <cpu> affinities");
    }
    t_.numa_nodes.push_back({numa, *pus});
    t_.packages.push_back({numa, *pus});  // NCCL: between two <cpu>s is SYS
    const PciPath root = {"cpu" + numa_text};
    for (xmlNodePtr c = cpu->children; c; c = c->next) {
      if (!IsElement(c)) continue;
      if (Name(c) == "pci") {
        GL_RETURN_IF_ERROR(Pci(c, numa, *pus, root));
      } else if (Name(c) == "nic") {
        GL_RETURN_IF_ERROR(NicElement(c, "", 0, 0, numa, *pus, root));
      } else {
        return Unknown(c, "<cpu> holds <pci> and <nic>");
      }
    }
    return Status::Ok();
  }

  Status Pci(xmlNodePtr pci, int numa, const std::vector<int>& pus, const PciPath& above) {
    const std::string bus = Lower(Attr(pci, "busid"));
    if (bus.empty()) return Error(pci, "<pci> needs busid=\"dddd:bb:dd.f\"");
    const std::string class_text = Attr(pci, "class"), vendor_text = Attr(pci, "vendor");
    const auto pci_class = class_text.empty() ? std::optional<unsigned long>(0) : Hex(class_text);
    const auto vendor = vendor_text.empty() ? std::optional<unsigned long>(0) : Hex(vendor_text);
    if (!pci_class) return Error(pci, "class=\"" + class_text + "\" is not a hex PCI class code like 0x030200");
    if (!vendor) return Error(pci, "vendor=\"" + vendor_text + "\" is not a hex PCI vendor id like 0x10de");
    PciPath below = above;
    below.push_back(bus);
    bool described = false, has_children = false;
    for (xmlNodePtr c = pci->children; c; c = c->next) {
      if (!IsElement(c)) continue;
      has_children = true;
      if (Name(c) == "pci") {
        GL_RETURN_IF_ERROR(Pci(c, numa, pus, below));
      } else if (Name(c) == "gpu") {
        GL_RETURN_IF_ERROR(GpuElement(c, bus, *vendor, numa, pus, above));
        described = true;
      } else if (Name(c) == "nic") {
        GL_RETURN_IF_ERROR(NicElement(c, bus, *pci_class, *vendor, numa, pus, above));
        described = true;
      } else {
        return Unknown(c, "<pci> holds <pci>, <gpu> and <nic>");
      }
    }
    if (described || has_children) return Status::Ok();
    // Only a class code: the form some vendors publish.
    const unsigned long base = *pci_class >> 16, sub = (*pci_class >> 8) & 0xff;
    const bool gpu_vendor = *vendor == 0x10de || *vendor == 0x1002 || *vendor == 0x8086;
    if ((base == 0x03 && (sub == 0x02 || gpu_vendor)) || (base == 0x12 && gpu_vendor)) {
      AddGpu(bus, *vendor, "", numa, pus, above);
    } else if (base == 0x02 && (sub == 0x07 || sub == 0x00)) {
      Nic n;
      n.name = bus;
      n.kind = NicKind("", *pci_class, *vendor);
      n.pci_bus_id = bus;
      n.numa_node = numa;
      n.local_pus = pus;
      n.pci_path = above;
      t_.nics.push_back(std::move(n));
    }
    return Status::Ok();
  }

  void AddGpu(const std::string& bus, unsigned long vendor, const std::string& model, int numa,
              const std::vector<int>& pus, const PciPath& above) {
    Gpu g;
    g.pci_bus_id = bus;
    g.vendor = VendorName(vendor);
    g.model = model;
    g.numa_node = numa;
    g.local_pus = pus;
    g.pci_path = above;
    t_.gpus.push_back(std::move(g));
  }

  Status GpuElement(xmlNodePtr gpu, const std::string& bus, unsigned long vendor, int numa,
                    const std::vector<int>& pus, const PciPath& above) {
    const std::string sm_text = Attr(gpu, "sm"), gcn = Attr(gpu, "gcn");
    int sm = 0;
    if (!sm_text.empty() && (!ParseInt(sm_text, sm) || sm < 0)) {
      return Error(gpu, "sm=\"" + sm_text + "\" is not an SM version like 80");
    }
    if (vendor == 0) vendor = gcn.empty() ? 0x10de : 0x1002;  // a <gpu> without a vendor: NCCL's or RCCL's
    AddGpu(bus, vendor, !gcn.empty() ? gcn : sm > 0 ? "sm_" + sm_text : "", numa, pus, above);
    for (xmlNodePtr l = gpu->children; l; l = l->next) {
      if (!IsElement(l)) continue;
      const bool nvlink = Name(l) == "nvlink";
      if (!nvlink && Name(l) != "xgmi") return Unknown(l, "<gpu> holds <nvlink> and <xgmi>");
      const std::string count_text = Attr(l, "count"), tclass_text = Attr(l, "tclass");
      int count = 0;
      if (!ParseInt(count_text, count) || count < 0) {
        return Error(l, "<" + Name(l) + "> needs count=\"N\" links, not \"" + count_text + "\"");
      }
      const auto tclass = Hex(tclass_text);
      if (!tclass) return Error(l, "tclass=\"" + tclass_text + "\" is not a hex PCI class code like 0x068000");
      const double per_link = nvlink ? NvlinkPerLink(sm) : XgmiPerLink(gcn);
      const unsigned long base = *tclass >> 16;
      if (*tclass == 0x068000) {
        links_.push_back({bus, "", count * per_link, true});  // towards the NVSwitches
      } else if (base == 0x03 || base == 0x12) {
        links_.push_back({bus, Lower(Attr(l, "target")), count * per_link, false});
      }  // else a link to a CPU (POWER9): not GPU-GPU bandwidth
    }
    return Status::Ok();
  }

  Status NicElement(xmlNodePtr nic, const std::string& bus, unsigned long pci_class, unsigned long vendor, int numa,
                    const std::vector<int>& pus, const PciPath& above) {
    bool any = false;
    for (xmlNodePtr net = nic->children; net; net = net->next) {
      if (!IsElement(net)) continue;
      if (Name(net) != "net") return Unknown(net, "<nic> holds <net> elements");
      const std::string name = Attr(net, "name"), speed_text = Attr(net, "speed");
      if (name.empty()) return Error(net, "<net> needs name=\"...\" (the device, like mlx5_0)");
      int speed = 0;
      if (!speed_text.empty() && (!ParseInt(speed_text, speed) || speed < 0)) {
        return Error(net, "speed=\"" + speed_text + "\" is not a number of Mb/s");
      }
      Nic n;
      n.name = NicName(name, Attr(net, "port"));
      n.kind = NicKind(name, pci_class, vendor);
      n.pci_bus_id = bus;
      n.numa_node = numa;
      n.local_pus = pus;
      n.pci_path = above;
      // Mb/s; a figure past 10 Tb/s is a plugin's mistake (RCCL's MI300A
      // capture reports 200000000 for a 200 Gb/s Slingshot port): unknown.
      n.gbps = speed <= 10000000 ? speed / 8000.0 : 0.0;
      t_.nics.push_back(std::move(n));
      any = true;
    }
    if (!any) return Error(nic, "<nic> without a <net name=...>");
    return Status::Ok();
  }

  // Cores from the CPUs. The format does not say which CPUs are hardware
  // threads of one core; Linux on x86 numbers the second thread of core k
  // k + N/2 (N CPUs in all), so when every <cpu> holds both halves that way
  // and some <cpu>'s CPUs are not one run (0-23,48-71: a contiguous set is as
  // well explained without SMT), those two are one core. Otherwise each CPU
  // is a core of its own.
  void AddCores() {
    std::map<int, int> numa_of;
    for (const NumaNode& n : t_.numa_nodes)
      for (int pu : n.pus) numa_of[pu] = n.os_index;
    const int half = static_cast<int>(numa_of.size() / 2);
    bool smt = numa_of.size() % 2 == 0 && half > 0 && numa_of.rbegin()->first == 2 * half - 1;
    for (const auto& [pu, numa] : numa_of) {
      const auto twin = numa_of.find(pu < half ? pu + half : pu - half);
      smt = smt && twin != numa_of.end() && twin->second == numa;
    }
    smt = smt && std::any_of(t_.numa_nodes.begin(), t_.numa_nodes.end(), [](const NumaNode& n) {
            return n.pus.back() - n.pus.front() + 1 != static_cast<int>(n.pus.size());
          });
    for (const auto& [pu, numa] : numa_of) {
      if (smt && pu >= half) continue;
      Core c{0, {pu}, numa, numa};
      if (smt) c.pus.push_back(pu + half);
      t_.cores.push_back(std::move(c));
    }
    for (size_t i = 0; i < t_.cores.size(); ++i) t_.cores[i].logical_index = static_cast<int>(i);
  }

  // Orders devices as discovery does and fills the GPU-GPU bandwidths.
  void Finish() {
    AddCores();
    std::stable_sort(t_.gpus.begin(), t_.gpus.end(),
                     [](const Gpu& a, const Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
    for (size_t i = 0; i < t_.gpus.size(); ++i) t_.gpus[i].index = static_cast<int>(i);
    std::stable_sort(t_.nics.begin(), t_.nics.end(), [](const Nic& a, const Nic& b) {
      return std::tie(a.pci_bus_id, a.name) < std::tie(b.pci_bus_id, b.name);
    });
    std::map<std::string, size_t> index;
    for (const Gpu& g : t_.gpus) index[g.pci_bus_id] = static_cast<size_t>(g.index);
    const size_t n = t_.gpus.size();
    std::vector<double> link(n * n, 0.0), to_switch(n, 0.0);
    for (const Link& l : links_) {
      const auto from = index.find(l.from);
      if (from == index.end()) continue;
      if (l.to_switch) {
        to_switch[from->second] += l.gbps;
        continue;
      }
      const auto to = index.find(l.target);
      if (to == index.end() || to->second == from->second) continue;  // outside the file, or itself
      link[from->second * n + to->second] += l.gbps;
    }
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (a == b) continue;
        double& v = link[a * n + b];
        v = std::max(v, link[b * n + a]);  // a link listed on one side only
        if (to_switch[a] > 0 && to_switch[b] > 0) v = std::max(v, std::min(to_switch[a], to_switch[b]));
      }
    }
    if (std::any_of(link.begin(), link.end(), [](double v) { return v > 0; })) t_.gpu_link_gbps = std::move(link);
  }

  static bool ParseInt(const std::string& s, int& out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoi(s);
    return true;
  }

  std::string origin_;
  HostTopology t_;
  std::set<int> numas_, pus_seen_;
  std::vector<Link> links_;
  std::optional<Status> no_affinity_;
};

}  // namespace

bool LooksLikeNcclTopology(const std::string& xml) {
  // The first element after the prolog and comments.
  size_t at = 0;
  while ((at = xml.find('<', at)) != std::string::npos) {
    if (xml.compare(at, 4, "<!--") == 0) {
      at = xml.find("-->", at);
      if (at == std::string::npos) return false;
      continue;
    }
    if (xml.compare(at, 2, "<?") == 0 || xml.compare(at, 2, "<!") == 0) {
      ++at;
      continue;
    }
    return xml.compare(at, 7, "<system") == 0 || xml.compare(at, 7, "<graphs") == 0;
  }
  return false;
}

namespace {

// The first error libxml2 reports (later ones follow from it), instead of
// its default of printing every one to stderr.
struct FirstXmlError {
  int line = 0;
  std::string message;
};

void KeepFirstXmlError(void* sink, xmlErrorPtr e) {
  auto* first = static_cast<FirstXmlError*>(sink);
  if (!first->message.empty() || !e || e->level < XML_ERR_ERROR) return;
  first->line = e->line;
  first->message = e->message ? std::string(Trim(e->message)) : "not well-formed XML";
}

}  // namespace

StatusOr<HostTopology> LoadNcclTopologyText(const std::string& xml, const std::string& origin) {
  std::unique_ptr<xmlParserCtxt, decltype(&xmlFreeParserCtxt)> ctxt(xmlNewParserCtxt(), xmlFreeParserCtxt);
  if (!ctxt) return Internal("libxml2 could not make a parser");
  FirstXmlError first;
  xmlSetStructuredErrorFunc(&first, KeepFirstXmlError);  // gpulaunch parses on one thread
  const int options = XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
  std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)> doc(
      xmlCtxtReadMemory(ctxt.get(), xml.data(), static_cast<int>(xml.size()), origin.c_str(), nullptr, options),
      xmlFreeDoc);
  xmlSetStructuredErrorFunc(nullptr, nullptr);
  if (!doc || !first.message.empty()) {
    return InvalidArgument(origin + ":" + std::to_string(std::max(first.line, 1)) + ": " +
                           (first.message.empty() ? "not well-formed XML" : first.message) +
                           "; NCCL writes such files with NCCL_TOPO_DUMP_FILE");
  }
  xmlNodePtr root = xmlDocGetRootElement(doc.get());
  if (!root) return InvalidArgument(origin + ":1: no root element");
  return Loader(origin).Load(root);
}

}  // namespace gpulaunch
