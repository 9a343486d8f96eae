#include "engine/formats/safetensors.h"

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace specscope {
namespace fs = std::filesystem;
using nlohmann::json;

static DType parse_dtype(const std::string& s, const std::string& where, const std::string& name) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "I64") return DType::I64;
  if (s == "I32") return DType::I32;
  if (s == "BOOL") return DType::BOOL;
  if (s == "U8") return DType::U8;
  throw InputError(where, "tensor '" + name + "' has unsupported dtype " + s);
}

std::map<std::string, TensorView> parse_safetensors(const uint8_t* bytes, size_t size, const std::string& where,
                                                    std::map<std::string, std::string>* metadata) {
  if (size < 8) throw InputError(where, "not a safetensors file (shorter than its 8-byte header length)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);  // little-endian on every platform we build for
  if (header_len > size - 8)
    throw InputError(where, "truncated or corrupt safetensors: header length " + std::to_string(header_len) +
                                " exceeds the file size " + std::to_string(size));
  if (header_len > (100u << 20)) throw InputError(where, "safetensors header larger than 100 MB");
  json header;
  try {
    header = json::parse(bytes + 8, bytes + 8 + header_len);
  } catch (const json::exception& e) {
    throw InputError(where, std::string("safetensors header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) throw InputError(where, "safetensors header is not a JSON object");
  const uint8_t* data = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::map<std::string, TensorView> out;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (metadata && info.is_object())
        for (auto& [k, v] : info.items())
          if (v.is_string()) (*metadata)[k] = v.get<std::string>();
      continue;
    }
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets") ||
        !info["dtype"].is_string() || !info["shape"].is_array() || !info["data_offsets"].is_array() ||
        info["data_offsets"].size() != 2)
      throw InputError(where, "tensor '" + name + "' has a malformed header entry");
    TensorView t;
    t.name = name;
    t.dtype = parse_dtype(info["dtype"].get<std::string>(), where, name);
    uint64_t numel = 1;
    for (auto& d : info["shape"]) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
        throw InputError(where, "tensor '" + name + "' has an invalid shape");
      uint64_t v = d.get<uint64_t>();
      if (v != 0 && numel > (uint64_t(1) << 48) / v) throw InputError(where, "tensor '" + name + "' is absurdly large");
      numel *= v;
      t.shape.push_back(int64_t(v));
    }
    auto& offs = info["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      throw InputError(where, "tensor '" + name + "' has invalid data_offsets");
    uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > data_size)
      throw InputError(where, "tensor '" + name + "' data_offsets [" + std::to_string(begin) + ", " +
                                  std::to_string(end) + "] lie outside the file's data (" + std::to_string(data_size) +
                                  " bytes): truncated or corrupt file");
    if (end - begin != numel * dtype_size(t.dtype))
      throw InputError(where, "tensor '" + name + "' byte size " + std::to_string(end - begin) +
                                  " does not match its shape " + t.shape_str() + " and dtype");
    t.data = data + begin;
    out.emplace(name, std::move(t));
  }
  return out;
}

void TensorStore::add_file(std::shared_ptr<MappedFile> file) {
  add_tensors(file, parse_safetensors(file->data(), file->size(), file->path(), &metadata));
}

void TensorStore::add_tensors(std::shared_ptr<MappedFile> file, std::map<std::string, TensorView> tensors) {
  for (auto& [name, t] : tensors) {
    if (tensors_.count(name)) throw InputError(file->path(), "tensor '" + name + "' appears in two files");
    t.keep_alive = file;
    tensors_.emplace(name, std::move(t));
  }
  files.push_back(file->path());
}

TensorStore TensorStore::open_file(const std::string& path) {
  TensorStore s;
  s.add_file(MappedFile::open(path));
  return s;
}

TensorStore TensorStore::open_dir(const std::string& dir) {
  TensorStore s;
  fs::path d(dir);
  fs::path single = d / "model.safetensors";
  fs::path index = d / "model.safetensors.index.json";
  if (fs::exists(single)) {
    s.add_file(MappedFile::open(single.string()));
    return s;
  }
  if (!fs::exists(index))
    throw InputError(dir, "no model.safetensors or model.safetensors.index.json (only safetensors weights are "
                          "supported for models; convert .bin checkpoints with transformers' save_pretrained)");
  json j;
  try {
    j = json::parse(read_text_file(index.string()));
  } catch (const json::exception& e) {
    throw InputError(index.string(), std::string("invalid JSON: ") + e.what());
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw InputError(index.string(), "missing the weight_map object");
  std::map<std::string, std::vector<std::string>> by_file;
  for (auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) throw InputError(index.string(), "weight_map entry for '" + name + "' is not a string");
    std::string f = file.get<std::string>();
    if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
      throw InputError(index.string(), "weight_map names a file outside the model directory: " + f);
    by_file[f].push_back(name);
  }
  for (auto& [file, names] : by_file) {
    s.add_file(MappedFile::open((d / file).string()));
    for (auto& n : names)
      if (!s.has(n)) throw InputError((d / file).string(), "does not contain tensor '" + n + "' listed in the index");
  }
  return s;
}

const TensorView& TensorStore::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw InputError(files.empty() ? std::string("weights") : files.front(), "missing tensor '" + name + "'");
  return it->second;
}

}  // namespace specscope
