#include "engine/formats/torch_checkpoint.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "engine/formats/pickle_reader.h"
#include "engine/formats/zip_reader.h"
#include "engine/util/error.h"

namespace specscope {
namespace {

using pickle::Kind;
using pickle::Program;
using pickle::Value;

constexpr int kMaxNesting = 32;

std::string shape_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Row-major contiguity, as torch defines it: dimensions of size 1 may have any stride; empty tensors are contiguous.
bool is_contiguous(const Value& t) {
  if (t.numel == 0) return true;
  int64_t expected = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.stride[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

class Collector {
 public:
  Collector(const Program& prog, const std::string& where) : prog_(prog), where_(where) {}

  // Flattens the top object: a dict of name -> tensor, where nested dicts (and lists) are joined with '.' (as a
  // {"model": {...}} or {"state_dict": {...}} checkpoint is). Scalars (an epoch number, a string) are skipped.
  std::map<std::string, const Value*> run() {
    const Value& root = prog_.values[prog_.root];
    if (root.kind != Kind::Dict)
      throw InputError(where_, std::string("not a state dict: the checkpoint's top-level object is of type ") +
                                   pickle::kind_name(root.kind) + ", not a dict of tensors");
    visit(prog_.root, "", 0);
    if (out_.empty()) throw InputError(where_, "the checkpoint's state dict holds no tensors");
    return std::move(out_);
  }

 private:
  void visit(uint32_t idx, const std::string& prefix, int depth) {
    const Value& v = prog_.values[idx];
    switch (v.kind) {
      case Kind::Tensor:
        if (out_.count(prefix)) throw InputError(where_, "tensor name '" + prefix + "' appears twice");
        if (!is_contiguous(v))
          throw InputError(where_, "tensor '" + prefix + "' is not contiguous (shape " + shape_text(v.shape) +
                                       ", strides " + shape_text(v.stride) +
                                       "); save it with .contiguous() or as safetensors");
        out_[prefix] = &v;
        return;
      case Kind::Dict:
      case Kind::List:
      case Kind::Tuple: {
        if (depth >= kMaxNesting) throw InputError(where_, "the checkpoint nests containers too deeply");
        if (!seen_.insert(idx).second)
          throw InputError(where_, "the checkpoint reuses one container twice (a cycle or shared sub-dict)");
        std::string base = prefix.empty() ? "" : prefix + ".";
        if (v.kind == Kind::Dict) {
          for (size_t k = 0; k + 1 < v.items.size(); k += 2) {
            const Value& key = prog_.values[v.items[k]];
            std::string name;
            if (key.kind == Kind::Str) name = key.s;
            else if (key.kind == Kind::Int) name = std::to_string(key.i);
            else throw InputError(where_, std::string("state dict key is a ") + pickle::kind_name(key.kind));
            if (name.empty()) throw InputError(where_, "state dict has an empty key");
            visit(v.items[k + 1], base + name, depth + 1);
          }
        } else {
          for (size_t k = 0; k < v.items.size(); ++k) visit(v.items[k], base + std::to_string(k), depth + 1);
        }
        return;
      }
      case Kind::None:
      case Kind::Bool:
      case Kind::Int:
      case Kind::Float:
      case Kind::Str:
      case Kind::Bytes:
        return;  // metadata next to the weights (epoch, step, config text)
      case Kind::Global:
      case Kind::Storage:
        throw InputError(where_, "state dict entry '" + prefix + "' is a bare " + pickle::kind_name(v.kind) +
                                     ", not a tensor");
    }
  }

  const Program& prog_;
  const std::string& where_;
  std::map<std::string, const Value*> out_;
  std::set<uint32_t> seen_;
};

}  // namespace

std::map<std::string, TensorView> parse_torch_checkpoint(const uint8_t* bytes, size_t size, const std::string& where) {
  if (!zip::looks_like_zip(bytes, size)) {
    if (size >= 2 && bytes[0] == 0x80 && bytes[1] <= 5)
      throw InputError(where, "a legacy (pre-1.6, non-zip) torch.save file or a bare pickle; re-save it with a "
                              "recent PyTorch (torch.save) or convert it to safetensors");
    throw InputError(where, "not a PyTorch checkpoint (not a zip archive)");
  }
  std::vector<zip::Entry> entries = zip::read_directory(bytes, size, where);
  std::unordered_map<std::string, const zip::Entry*> by_name;
  const zip::Entry* pkl = nullptr;
  std::string prefix;
  for (const auto& e : entries) {
    if (!by_name.emplace(e.name, &e).second) throw InputError(where, "ZIP entry '" + e.name + "' appears twice");
    // <prefix>/data.pkl with a single top-level folder, as torch.save writes it
    static const std::string tail = "/data.pkl";
    if (e.name.size() > tail.size() && e.name.compare(e.name.size() - tail.size(), tail.size(), tail) == 0 &&
        e.name.find('/') == e.name.size() - tail.size()) {
      if (pkl) throw InputError(where, "the archive holds two pickles ('" + pkl->name + "' and '" + e.name + "')");
      pkl = &e;
      prefix = e.name.substr(0, e.name.size() - tail.size() + 1);
    }
  }
  if (!pkl) throw InputError(where, "a zip archive without <name>/data.pkl: not a torch.save checkpoint");
  if (auto it = by_name.find(prefix + "byteorder"); it != by_name.end()) {
    const uint8_t* p = zip::entry_data(bytes, size, *it->second, where);
    std::string order(reinterpret_cast<const char*>(p), size_t(std::min<uint64_t>(it->second->size, 16)));
    if (order != "little")
      throw InputError(where, "checkpoint byte order is '" + order + "'; only little-endian checkpoints are supported");
  }
  const uint8_t* pkl_data = zip::entry_data(bytes, size, *pkl, where);
  Program prog = pickle::interpret(pkl_data, size_t(pkl->size), where);
  std::map<std::string, const Value*> tensors = Collector(prog, where).run();

  std::map<std::string, TensorView> out;
  for (auto& [name, t] : tensors) {
    const Value& st = prog.values[t->storage];
    auto it = by_name.find(prefix + "data/" + st.s);
    if (it == by_name.end())
      throw InputError(where, "tensor '" + name + "' refers to storage '" + st.s + "', which the archive lacks");
    const zip::Entry& e = *it->second;
    const uint8_t* data = zip::entry_data(bytes, size, e, where);
    const uint64_t esize = dtype_size(st.dtype);
    // numel <= 2^48 and esize <= 8, so the product cannot overflow
    if (e.size != uint64_t(st.numel) * esize)
      throw InputError(where, "storage '" + e.name + "' holds " + std::to_string(e.size) + " bytes, not the " +
                                  std::to_string(uint64_t(st.numel) * esize) + " its " + std::to_string(st.numel) +
                                  " elements need");
    TensorView v;
    v.name = name;
    v.dtype = t->dtype;
    v.shape = t->shape;
    // offset + numel <= storage numel was checked by the interpreter (an empty tensor may carry any offset)
    v.data = t->numel > 0 ? data + uint64_t(t->offset) * esize : data;
    out.emplace(name, std::move(v));
  }
  return out;
}

std::map<std::string, TensorView> load_torch_checkpoint(std::shared_ptr<MappedFile> file) {
  auto tensors = parse_torch_checkpoint(file->data(), file->size(), file->path());
  for (auto& [name, t] : tensors) t.keep_alive = file;
  return tensors;
}

}  // namespace specscope
