#include "launcher/discovery/nccl_topology.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "common/strings.h"
#include "launcher/discovery/libxml2_library.h"
#include "launcher/discovery/nccl_format.h"

namespace gpulaunch {
namespace {

using namespace nccl;  // the format's rules (nccl_format.h)

constexpr const char* kKnownElements = "system, cpu, pci, gpu, nic, net, nvlink, xgmi";

std::string Name(xmlNodePtr n) { return reinterpret_cast<const char*>(n->name); }

bool IsElement(xmlNodePtr n) { return n->type == XML_ELEMENT_NODE; }

class Loader {
 public:
  Loader(const Libxml2& xml, const std::string& origin) : xml_(xml), origin_(origin) {}

  Status Error(xmlNodePtr at, const std::string& what) const {
    return InvalidArgument(origin_ + ":" + std::to_string(xml_.GetLineNo(at)) + ": " + what);
  }

  std::string Attr(xmlNodePtr n, const char* name) const {
    xmlChar* v = xml_.GetProp(n, reinterpret_cast<const xmlChar*>(name));
    if (!v) return "";
    std::string out = reinterpret_cast<const char*>(v);
    xml_.Free(v);
    return out;
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

  // Orders devices as discovery does and fills cores and GPU-GPU bandwidths.
  void Finish() {
    AddCoresFromCpus(t_);
    std::stable_sort(t_.gpus.begin(), t_.gpus.end(),
                     [](const Gpu& a, const Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
    for (size_t i = 0; i < t_.gpus.size(); ++i) t_.gpus[i].index = static_cast<int>(i);
    std::stable_sort(t_.nics.begin(), t_.nics.end(), [](const Nic& a, const Nic& b) {
      return std::tie(a.pci_bus_id, a.name) < std::tie(b.pci_bus_id, b.name);
    });
    t_.gpu_link_gbps = GpuLinkMatrix(t_.gpus, links_);
  }

  static bool ParseInt(const std::string& s, int& out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoi(s);
    return true;
  }

  const Libxml2& xml_;
  std::string origin_;
  HostTopology t_;
  std::set<int> numas_, pus_seen_;
  std::vector<GpuLink> links_;
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
  std::string why;
  const Libxml2* lib = LoadLibxml2(&why);
  if (!lib) return FailedPrecondition(origin + ": " + why);
  std::unique_ptr<xmlParserCtxt, decltype(lib->FreeParserCtxt)> ctxt(lib->NewParserCtxt(), lib->FreeParserCtxt);
  if (!ctxt) return Internal("libxml2 could not make a parser");
  FirstXmlError first;
  lib->SetStructuredErrorFunc(&first, KeepFirstXmlError);  // gpulaunch parses on one thread
  const int options = XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
  std::unique_ptr<xmlDoc, decltype(lib->FreeDoc)> doc(
      lib->CtxtReadMemory(ctxt.get(), xml.data(), static_cast<int>(xml.size()), origin.c_str(), nullptr, options),
      lib->FreeDoc);
  lib->SetStructuredErrorFunc(nullptr, nullptr);
  if (!doc || !first.message.empty()) {
    return InvalidArgument(origin + ":" + std::to_string(std::max(first.line, 1)) + ": " +
                           (first.message.empty() ? "not well-formed XML" : first.message) +
                           "; NCCL writes such files with NCCL_TOPO_DUMP_FILE");
  }
  xmlNodePtr root = lib->DocGetRootElement(doc.get());
  if (!root) return InvalidArgument(origin + ":1: no root element");
  return Loader(*lib, origin).Load(root);
}

}  // namespace gpulaunch
