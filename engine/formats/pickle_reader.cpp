#include "engine/formats/pickle_reader.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "engine/util/error.h"

namespace specscope::pickle {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

namespace {

// The globals a state dict may reference. Storage types map to element types; the others are callables.
struct StorageType {
  const char* name;
  DType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"torch.FloatStorage", DType::F32}, {"torch.HalfStorage", DType::F16}, {"torch.BFloat16Storage", DType::BF16},
    {"torch.LongStorage", DType::I64},  {"torch.IntStorage", DType::I32},  {"torch.BoolStorage", DType::BOOL},
    {"torch.ByteStorage", DType::U8},
};
constexpr const char* kCallables[] = {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
                                      "torch._utils._rebuild_parameter",
                                      "torch._utils._rebuild_parameter_with_state"};
// Known torch storage types we cannot represent: named in the error so the user knows what to convert.
constexpr const char* kOtherStorages[] = {"torch.DoubleStorage",        "torch.ShortStorage",
                                          "torch.CharStorage",          "torch.ComplexFloatStorage",
                                          "torch.ComplexDoubleStorage", "torch.QInt8Storage",
                                          "torch.QUInt8Storage",        "torch.Float8_e4m3fnStorage",
                                          "torch.Float8_e5m2Storage",   "torch.UntypedStorage"};

constexpr size_t kMaxLine = 256;          // GLOBAL module/name lines
constexpr int64_t kMaxElements = int64_t(1) << 48;
constexpr size_t kMaxDims = 16;
// A state dict needs ~15 objects per tensor; this bounds memory on hostile input (~150 bytes per object).
constexpr size_t kMaxValues = size_t(1) << 20;

class Interpreter {
 public:
  Interpreter(const uint8_t* d, size_t n, const std::string& where) : d_(d), n_(n), where_(where) {}

  Program run() {
    while (true) {
      if (pos_ >= n_) fail("truncated pickle (ended before its STOP opcode)");
      size_t at = pos_;
      uint8_t op = d_[pos_++];
      switch (op) {
        case 0x80: take(1); break;   // PROTO
        case 0x95: take(8); break;   // FRAME (a length hint; framing needs no action)
        case '.': {                  // STOP
          if (stack_.size() <= floor()) fail("pickle STOP with an empty stack");
          prog_.root = stack_.back();
          return std::move(prog_);
        }
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case 'N': push(make(Kind::None)); break;
        case 0x88: push_bool(true); break;   // NEWTRUE
        case 0x89: push_bool(false); break;  // NEWFALSE
        case 'K': push_int(take(1)[0]); break;  // BININT1
        case 'M': { auto p = take(2); push_int(p[0] | (p[1] << 8)); break; }  // BININT2
        case 'J': { auto p = take(4); int32_t v; std::memcpy(&v, p, 4); push_int(v); break; }  // BININT
        case 0x8a: push_int(read_long(take(1)[0])); break;  // LONG1
        case 0x8b: {  // LONG4
          uint32_t n = u32(take(4));
          if (n > 8) fail("pickle integer wider than 64 bits");
          push_int(read_long(n));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          auto p = take(8);
          uint64_t u = 0;
          for (int k = 0; k < 8; ++k) u = (u << 8) | p[k];
          double f;
          std::memcpy(&f, &u, 8);
          uint32_t v = make(Kind::Float);
          prog_.values[v].f = f;
          push(v);
          break;
        }
        case 'X': push_str(Kind::Str, u32(take(4))); break;    // BINUNICODE
        case 0x8c: push_str(Kind::Str, take(1)[0]); break;     // SHORT_BINUNICODE
        case 0x8d: push_str(Kind::Str, u64(take(8))); break;   // BINUNICODE8
        case 'U': push_str(Kind::Str, take(1)[0]); break;      // SHORT_BINSTRING
        case 'T': push_str(Kind::Str, u32(take(4))); break;    // BINSTRING
        case 'C': push_str(Kind::Bytes, take(1)[0]); break;    // SHORT_BINBYTES
        case 'B': push_str(Kind::Bytes, u32(take(4))); break;  // BINBYTES
        case 0x8e: push_str(Kind::Bytes, u64(take(8))); break; // BINBYTES8
        case ')': push(make(Kind::Tuple)); break;  // EMPTY_TUPLE
        case ']': push(make(Kind::List)); break;   // EMPTY_LIST
        case '}': push(make(Kind::Dict)); break;   // EMPTY_DICT
        case 't': push(make_container(Kind::Tuple, pop_mark())); break;  // TUPLE
        case 'l': push(make_container(Kind::List, pop_mark())); break;   // LIST
        case 'd': {  // DICT
          auto items = pop_mark();
          if (items.size() % 2) fail("pickle DICT with an odd number of items");
          push(make_container(Kind::Dict, std::move(items)));
          break;
        }
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          size_t k = size_t(op - 0x84);
          if (stack_.size() < k + floor()) fail("pickle stack underflow");
          std::vector<uint32_t> items(stack_.end() - long(k), stack_.end());
          stack_.resize(stack_.size() - k);
          push(make_container(Kind::Tuple, std::move(items)));
          break;
        }
        case 'a': {  // APPEND
          uint32_t v = pop();
          list_at_top().push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          auto items = pop_mark();
          auto& l = list_at_top();
          l.insert(l.end(), items.begin(), items.end());
          break;
        }
        case 's': {  // SETITEM
          uint32_t v = pop(), k = pop();
          auto& dict = dict_at_top();
          dict.push_back(k);
          dict.push_back(v);
          break;
        }
        case 'u': {  // SETITEMS
          auto items = pop_mark();
          if (items.size() % 2) fail("pickle SETITEMS with an odd number of items");
          auto& dict = dict_at_top();
          dict.insert(dict.end(), items.begin(), items.end());
          break;
        }
        case '0': pop(); break;  // POP
        case '1': pop_mark(); break;  // POP_MARK
        case '2': {  // DUP
          if (stack_.size() <= floor()) fail("pickle stack underflow");
          push(stack_.back());
          break;
        }
        case 'q': memo_put(take(1)[0]); break;  // BINPUT
        case 'r': memo_put(u32(take(4))); break;  // LONG_BINPUT
        case 0x94: memo_put(uint32_t(memo_.size())); break;  // MEMOIZE
        case 'h': memo_get(take(1)[0]); break;  // BINGET
        case 'j': memo_get(u32(take(4))); break;  // LONG_BINGET
        case 'c': {  // GLOBAL module\nname\n
          std::string module = read_line(), name = read_line();
          push(make_global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          uint32_t name = pop(), module = pop();
          if (val(name).kind != Kind::Str || val(module).kind != Kind::Str) fail("pickle STACK_GLOBAL needs two strings");
          std::string qual = val(module).s + "." + val(name).s;
          push(make_global(qual));
          break;
        }
        case 'Q': {  // BINPERSID
          uint32_t pid = pop();
          push(make_storage(pid));
          break;
        }
        case 'R': {  // REDUCE
          uint32_t args = pop(), fn = pop();
          push(reduce(fn, args));
          break;
        }
        case 'b': {  // BUILD: the state of an OrderedDict subclass (a state dict's _metadata); ignored
          uint32_t state = pop();
          (void)state;
          if (stack_.size() <= floor()) fail("pickle stack underflow");
          Kind k = val(stack_.back()).kind;
          if (k != Kind::Dict && k != Kind::Tensor)
            fail(std::string("pickle BUILD on a ") + kind_name(k) + ", which a state dict never needs");
          break;
        }
        default: {
          char buf[64];
          std::snprintf(buf, sizeof buf, "unsupported pickle opcode 0x%02x at byte %zu", op, at);
          fail(std::string(buf) + " (not something torch.save writes for a state dict)");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(where_, msg); }

  const uint8_t* take(size_t k) {
    if (n_ - pos_ < k) fail("truncated pickle");
    const uint8_t* p = d_ + pos_;
    pos_ += k;
    return p;
  }
  static uint32_t u32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  }
  static uint64_t u64(const uint8_t* p) { return uint64_t(u32(p)) | uint64_t(u32(p + 4)) << 32; }

  int64_t read_long(uint64_t nbytes) {
    if (nbytes > 8) fail("pickle integer wider than 64 bits");
    const uint8_t* p = take(size_t(nbytes));
    if (nbytes == 0) return 0;
    uint64_t u = 0;
    for (size_t k = 0; k < nbytes; ++k) u |= uint64_t(p[k]) << (8 * k);
    if (nbytes < 8 && (p[nbytes - 1] & 0x80)) u |= ~uint64_t(0) << (8 * nbytes);  // sign-extend
    int64_t v;
    std::memcpy(&v, &u, 8);
    return v;
  }

  std::string read_line() {
    size_t start = pos_;
    while (pos_ < n_ && d_[pos_] != '\n') {
      if (pos_ - start >= kMaxLine) fail("pickle GLOBAL name is too long");
      ++pos_;
    }
    if (pos_ >= n_) fail("truncated pickle (unterminated GLOBAL)");
    std::string s(reinterpret_cast<const char*>(d_ + start), pos_ - start);
    ++pos_;
    return s;
  }

  Value& val(uint32_t i) { return prog_.values[i]; }
  uint32_t make(Kind k) {
    if (prog_.values.size() >= kMaxValues)
      fail("pickle too large (more than " + std::to_string(kMaxValues) + " objects)");
    prog_.values.emplace_back();
    prog_.values.back().kind = k;
    return uint32_t(prog_.values.size() - 1);
  }
  uint32_t make_container(Kind k, std::vector<uint32_t> items) {
    uint32_t v = make(k);
    val(v).items = std::move(items);
    return v;
  }
  void push(uint32_t v) { stack_.push_back(v); }
  void push_bool(bool b) {
    uint32_t v = make(Kind::Bool);
    val(v).i = b;
    push(v);
  }
  void push_int(int64_t i) {
    uint32_t v = make(Kind::Int);
    val(v).i = i;
    push(v);
  }
  void push_str(Kind k, uint64_t len) {
    if (len > n_ - pos_) fail("truncated pickle (a string runs past the end)");
    const uint8_t* p = take(size_t(len));
    uint32_t v = make(k);
    val(v).s.assign(reinterpret_cast<const char*>(p), size_t(len));
    push(v);
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  uint32_t pop() {
    if (stack_.size() <= floor()) fail("pickle stack underflow");
    uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("pickle opcode needs a MARK but there is none");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + long(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  std::vector<uint32_t>& list_at_top() {
    if (stack_.size() <= floor() || val(stack_.back()).kind != Kind::List) fail("pickle APPEND to something not a list");
    return val(stack_.back()).items;
  }
  std::vector<uint32_t>& dict_at_top() {
    if (stack_.size() <= floor() || val(stack_.back()).kind != Kind::Dict) fail("pickle SETITEM on something not a dict");
    return val(stack_.back()).items;
  }
  void memo_put(uint32_t key) {
    if (stack_.size() <= floor()) fail("pickle memo store with an empty stack");
    memo_[key] = stack_.back();
  }
  void memo_get(uint32_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("pickle refers to memo entry " + std::to_string(key) + ", which was never stored");
    push(it->second);
  }

  uint32_t make_global(const std::string& qual) {
    for (auto& st : kStorageTypes)
      if (qual == st.name) {
        uint32_t v = make(Kind::Global);
        val(v).s = qual;
        return v;
      }
    for (auto* c : kCallables)
      if (qual == c) {
        uint32_t v = make(Kind::Global);
        val(v).s = qual;
        return v;
      }
    for (auto* o : kOtherStorages)
      if (qual == o) fail("tensor storage type " + qual + " is not supported (use float32/16, bfloat16, int64/32, bool or uint8)");
    std::string shown = qual.size() > 80 ? qual.substr(0, 80) + "..." : qual;
    for (auto& ch : shown)
      if (static_cast<unsigned char>(ch) < 32 || static_cast<unsigned char>(ch) > 126) ch = '?';
    fail("the pickle refers to the global '" + shown +
         "', which a plain state dict never needs; refusing to load it (nothing was executed)");
  }

  const StorageType* storage_type_of(uint32_t v) {
    if (val(v).kind != Kind::Global) return nullptr;
    for (auto& st : kStorageTypes)
      if (val(v).s == st.name) return &st;
    return nullptr;
  }

  // ('storage', torch.<T>Storage, key, location, numel)
  uint32_t make_storage(uint32_t pid) {
    const Value& t = val(pid);
    if (t.kind != Kind::Tuple || t.items.size() != 5)
      fail("pickle persistent id is not a ('storage', type, key, location, numel) tuple");
    const Value& tag = val(t.items[0]);
    if (tag.kind != Kind::Str || tag.s != "storage") fail("pickle persistent id is not a tensor storage");
    const StorageType* st = storage_type_of(t.items[1]);
    if (!st) fail("pickle persistent id does not name a supported torch storage type");
    const Value& key = val(t.items[2]);
    if (key.kind != Kind::Str || key.s.empty() || key.s.size() > 64) fail("pickle storage key is not a short string");
    const Value& numel = val(t.items[4]);
    if (numel.kind != Kind::Int || numel.i < 0 || numel.i > kMaxElements) fail("pickle storage has an invalid size");
    DType dt = st->dtype;
    std::string k = key.s;
    int64_t n = numel.i;
    uint32_t v = make(Kind::Storage);
    val(v).dtype = dt;
    val(v).s = std::move(k);
    val(v).numel = n;
    return v;
  }

  std::vector<int64_t> int_tuple(uint32_t v, const char* what) {
    const Value& t = val(v);
    if (t.kind != Kind::Tuple || t.items.size() > kMaxDims) fail(std::string("tensor ") + what + " is not a tuple of ints");
    std::vector<int64_t> out;
    for (uint32_t e : t.items) {
      if (val(e).kind != Kind::Int || val(e).i < 0 || val(e).i > kMaxElements)
        fail(std::string("tensor ") + what + " holds an invalid value");
      out.push_back(val(e).i);
    }
    return out;
  }

  uint32_t reduce(uint32_t fn, uint32_t args) {
    if (val(fn).kind != Kind::Global) fail(std::string("pickle REDUCE calls a ") + kind_name(val(fn).kind));
    if (val(args).kind != Kind::Tuple) fail("pickle REDUCE arguments are not a tuple");
    const std::string f = val(fn).s;
    const std::vector<uint32_t> a = val(args).items;
    if (f == "collections.OrderedDict") {
      if (!a.empty()) fail("pickle builds an OrderedDict from arguments (torch.save never does)");
      return make(Kind::Dict);
    }
    if (f == "torch._utils._rebuild_tensor_v2") {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
      if (a.size() != 6 && a.size() != 7) fail("_rebuild_tensor_v2 with " + std::to_string(a.size()) + " arguments");
      if (val(a[0]).kind != Kind::Storage) fail("_rebuild_tensor_v2 without a storage");
      if (val(a[1]).kind != Kind::Int || val(a[1]).i < 0) fail("_rebuild_tensor_v2 with an invalid storage offset");
      std::vector<int64_t> shape = int_tuple(a[2], "size"), stride = int_tuple(a[3], "stride");
      if (shape.size() != stride.size()) fail("tensor size and stride have different lengths");
      int64_t numel = 1;
      for (int64_t d : shape) {
        if (d != 0 && numel > kMaxElements / d) fail("tensor is absurdly large");
        numel *= d;
      }
      const Value& st = val(a[0]);
      int64_t off = val(a[1]).i;
      if (numel > 0 && (off > st.numel || numel > st.numel - off))
        fail("tensor of " + std::to_string(numel) + " elements at offset " + std::to_string(off) +
             " exceeds its storage of " + std::to_string(st.numel) + " elements");
      uint32_t storage = a[0];
      uint32_t v = make(Kind::Tensor);
      Value& t = val(v);
      t.storage = storage;
      t.dtype = val(storage).dtype;
      t.offset = off;
      t.numel = numel;
      t.shape = std::move(shape);
      t.stride = std::move(stride);
      return v;
    }
    if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state") {
      if (a.size() < 3 || a.size() > 4 || val(a[0]).kind != Kind::Tensor) fail(f + " without a tensor");
      return a[0];
    }
    fail("pickle calls " + f + ", which is not callable");
  }

  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& where_;
  Program prog_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, uint32_t> memo_;
};

}  // namespace

Program interpret(const uint8_t* data, size_t size, const std::string& where) {
  return Interpreter(data, size, where).run();
}

}  // namespace specscope::pickle
