// cls_dfslab: select / project / aggregate inside the OSD over dfslab's columnar objects.
//
// Object layout (little-endian), one row group per object:
//   "DFC1" u32 nrows u32 ncols
//   per column: u8 type (1 f64, 2 i64, 3 utf-8 string) u8 namelen name u64 offset u64 length
//   column data at [offset, offset+length): f64/i64: nrows x 8 bytes;
//   string: (nrows+1) u32 offsets into the bytes that follow them, then the bytes.
//
// Request of method "query":
//   "DFQ1" u32 object_len
//   u8 npred, each: u8 namelen name u8 op (0 <, 1 <=, 2 >, 3 >=, 4 =, 5 !=) u8 vtype value
//                   (vtype 1 f64 / 2 i64: 8 bytes; 3 string: u32 len + bytes)   -- ANDed
//   u8 nproj, each: u8 namelen name                     (select mode: rows out)
//   u8 nagg,  each: u8 func (0 count, 1 sum, 2 min, 3 max) u8 namelen name (count: may be empty)
//   u8 namelen groupby (0: no grouping)
//   optional: u32 first_row u32 row_count   (a slice of the object's rows; absent: all of them)
// nagg > 0: aggregate mode, answer "DFA1" u32 ngroups u8 nagg, per group a key (u8 type 0 none /
// 1 f64 / 2 i64 / 3 string, value) then per aggregate u64 count f64 sum f64 min f64 max;
// otherwise select mode, answer a "DFC1" object of the matching rows' projected columns.
//
// Everything read from the object or the request is bounds-checked: bad input is -EINVAL
// (or -EIO for a malformed object), never a crash. The method is read-only. What one call may
// allocate is bounded before the scan (projected bytes of the slice, or groups x aggregates):
// over kMaxAnswer the call is refused with -E2BIG, and the client asks again for smaller slices.

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <string>
#include <vector>

#include "objclass_c.h"

namespace {

const uint32_t kMaxObject = 256u << 20;
const uint64_t kMaxAnswer = 32ull << 20;  // bytes of answer (and of the work behind it) per call
const uint64_t kGroupOverhead = 160;      // a std::map node + Key + vector header, per group

enum ColType : uint8_t { kF64 = 1, kI64 = 2, kStr = 3 };

struct Reader {
  const uint8_t *p;
  size_t n, pos = 0;
  bool ok = true;
  Reader(const void *data, size_t len) : p(static_cast<const uint8_t *>(data)), n(len) {}
  bool take(void *out, size_t k) {
    if (!ok || k > n - pos) return ok = false;
    memcpy(out, p + pos, k);
    pos += k;
    return true;
  }
  template <typename T> T get() {
    T v{};
    take(&v, sizeof v);
    return v;
  }
  std::string name() {
    uint8_t len = get<uint8_t>();
    if (!ok || len > n - pos) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char *>(p + pos), len);
    pos += len;
    return s;
  }
};

struct Column {
  std::string name;
  uint8_t type = 0;
  const uint8_t *data = nullptr;  // f64/i64 values, or string bytes
  const uint32_t *offsets = nullptr;  // strings: nrows+1 (unaligned reads via memcpy)
  uint64_t length = 0;

  double num(uint32_t row) const {
    if (type == kF64) { double v; memcpy(&v, data + 8ull * row, 8); return v; }
    int64_t v; memcpy(&v, data + 8ull * row, 8); return static_cast<double>(v);
  }
  int64_t i64(uint32_t row) const { int64_t v; memcpy(&v, data + 8ull * row, 8); return v; }
  uint32_t off(uint32_t i) const { uint32_t v; memcpy(&v, reinterpret_cast<const uint8_t *>(offsets) + 4ull * i, 4); return v; }
  std::string str(uint32_t row) const {
    uint32_t a = off(row), b = off(row + 1);
    return std::string(reinterpret_cast<const char *>(data) + a, b - a);
  }
};

struct Table {
  uint32_t nrows = 0;
  std::vector<Column> cols;
  const Column *find(const std::string &name) const {
    for (const auto &c : cols) if (c.name == name) return &c;
    return nullptr;
  }
};

// Parse and validate a columnar object; false if anything points outside it.
bool parse_table(const uint8_t *buf, size_t len, Table *t) {
  Reader r(buf, len);
  char magic[4];
  if (!r.take(magic, 4) || memcmp(magic, "DFC1", 4) != 0) return false;
  t->nrows = r.get<uint32_t>();
  uint32_t ncols = r.get<uint32_t>();
  if (!r.ok || ncols > 1024 || t->nrows > len) return false;
  for (uint32_t i = 0; i < ncols; i++) {
    Column c;
    c.type = r.get<uint8_t>();
    c.name = r.name();
    uint64_t off = r.get<uint64_t>();
    c.length = r.get<uint64_t>();
    if (!r.ok || off > len || c.length > len - off) return false;
    const uint8_t *base = buf + off;
    if (c.type == kF64 || c.type == kI64) {
      if (c.length != 8ull * t->nrows) return false;
      c.data = base;
    } else if (c.type == kStr) {
      uint64_t head = 4ull * (t->nrows + 1);
      if (c.length < head) return false;
      c.offsets = reinterpret_cast<const uint32_t *>(base);
      c.data = base + head;
      uint64_t bytes = c.length - head;
      uint32_t prev = 0;
      for (uint32_t k = 0; k <= t->nrows; k++) {
        uint32_t o = c.off(k);
        if ((k == 0 && o != 0) || o < prev || o > bytes) return false;
        prev = o;
      }
    } else {
      return false;
    }
    t->cols.push_back(c);
  }
  return true;
}

struct Predicate {
  const Column *col;
  uint8_t op, vtype;
  double num = 0;
  int64_t i = 0;
  std::string s;
};

template <typename T> bool compare(T a, T b, uint8_t op) {
  switch (op) {
    case 0: return a < b;
    case 1: return a <= b;
    case 2: return a > b;
    case 3: return a >= b;
    case 4: return a == b;
    default: return a != b;
  }
}

bool matches(const Predicate &p, uint32_t row) {
  if (p.col->type == kStr) return compare(p.col->str(row), p.s, p.op);
  if (p.col->type == kI64 && p.vtype == kI64) return compare(p.col->i64(row), p.i, p.op);
  return compare(p.col->num(row), p.num, p.op);
}

struct Agg {
  uint8_t func;
  const Column *col;  // null: count(*)
};

struct Partial {
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
};

struct Writer {
  std::string out;
  template <typename T> void put(T v) { out.append(reinterpret_cast<const char *>(&v), sizeof v); }
  void bytes(const void *p, size_t n) { out.append(static_cast<const char *>(p), n); }
};

// The selected rows' projected columns, as a DFC1 object.
std::string encode_rows(const std::vector<const Column *> &cols, const std::vector<uint32_t> &rows) {
  std::vector<std::string> data(cols.size());
  for (size_t i = 0; i < cols.size(); i++) {
    const Column *c = cols[i];
    Writer w;
    if (c->type == kStr) {
      uint32_t off = 0;
      w.put(off);
      for (uint32_t r : rows) { off += c->off(r + 1) - c->off(r); w.put(off); }
      for (uint32_t r : rows) w.bytes(c->data + c->off(r), c->off(r + 1) - c->off(r));
    } else {
      for (uint32_t r : rows) w.bytes(c->data + 8ull * r, 8);
    }
    data[i] = std::move(w.out);
  }
  uint64_t header = 12;
  for (const Column *c : cols) header += 1 + 1 + c->name.size() + 16;
  Writer w;
  w.bytes("DFC1", 4);
  w.put(static_cast<uint32_t>(rows.size()));
  w.put(static_cast<uint32_t>(cols.size()));
  uint64_t off = header;
  for (size_t i = 0; i < cols.size(); i++) {
    w.put(cols[i]->type);
    w.put(static_cast<uint8_t>(cols[i]->name.size()));
    w.bytes(cols[i]->name.data(), cols[i]->name.size());
    w.put(off);
    w.put(static_cast<uint64_t>(data[i].size()));
    off += data[i].size();
  }
  for (const auto &d : data) w.out += d;
  return w.out;
}

struct Key {
  uint8_t type = 0;
  double num = 0;
  int64_t i = 0;
  std::string s;
  bool operator<(const Key &o) const {
    if (type != o.type) return type < o.type;
    if (type == kStr) return s < o.s;
    if (type == kI64) return i < o.i;
    // NaN keys are one group, after every number (a strict weak order; NaN < x is always false).
    bool nan_a = num != num, nan_b = o.num != o.num;
    if (nan_a || nan_b) return !nan_a && nan_b;
    return num < o.num;
  }
};

Key key_of(const Column *c, uint32_t row) {
  Key k;
  if (!c) return k;
  k.type = c->type;
  if (c->type == kStr) k.s = c->str(row);
  else if (c->type == kI64) k.i = c->i64(row);
  else k.num = c->num(row);
  return k;
}

std::string encode_groups(const std::map<Key, std::vector<Partial>> &groups, size_t nagg) {
  Writer w;
  w.bytes("DFA1", 4);
  w.put(static_cast<uint32_t>(groups.size()));
  w.put(static_cast<uint8_t>(nagg));
  for (const auto &g : groups) {
    w.put(g.first.type);
    if (g.first.type == kStr) {
      w.put(static_cast<uint32_t>(g.first.s.size()));
      w.bytes(g.first.s.data(), g.first.s.size());
    } else if (g.first.type == kI64) {
      w.put(g.first.i);
    } else if (g.first.type == kF64) {
      w.put(g.first.num);
    }
    for (const Partial &p : g.second) { w.put(p.count); w.put(p.sum); w.put(p.min); w.put(p.max); }
  }
  return w.out;
}

int run_query(cls_method_context_t ctx, const char *in, int inlen, std::string *answer) {
  if (inlen < 0) return -EINVAL;
  Reader q(in, static_cast<size_t>(inlen));
  char magic[4];
  if (!q.take(magic, 4) || memcmp(magic, "DFQ1", 4) != 0) return -EINVAL;
  uint32_t object_len = q.get<uint32_t>();
  if (!q.ok || object_len == 0 || object_len > kMaxObject) return -EINVAL;

  // Parse the whole request before reading the object: bad arguments cost no I/O.
  struct PredSpec { std::string name; uint8_t op, vtype; double num; int64_t i; std::string s; };
  std::vector<PredSpec> preds(q.get<uint8_t>());
  for (auto &p : preds) {
    p.name = q.name();
    p.op = q.get<uint8_t>();
    p.vtype = q.get<uint8_t>();
    if (p.op > 5) return -EINVAL;
    if (p.vtype == kF64) { p.num = q.get<double>(); }
    else if (p.vtype == kI64) { p.i = q.get<int64_t>(); p.num = static_cast<double>(p.i); }
    else if (p.vtype == kStr) {
      uint32_t len = q.get<uint32_t>();
      if (!q.ok || len > q.n - q.pos) return -EINVAL;
      p.s.assign(in + q.pos, len);
      q.pos += len;
    } else return -EINVAL;
  }
  std::vector<std::string> proj(q.get<uint8_t>());
  for (auto &name : proj) name = q.name();
  struct AggSpec { uint8_t func; std::string name; };
  std::vector<AggSpec> aggs(q.get<uint8_t>());
  for (auto &a : aggs) {
    a.func = q.get<uint8_t>();
    a.name = q.name();
    if (a.func > 3 || (a.func != 0 && a.name.empty())) return -EINVAL;
  }
  std::string groupby = q.name();
  uint32_t first = 0, count = UINT32_MAX;
  if (q.ok && q.n - q.pos == 8) {
    first = q.get<uint32_t>();
    count = q.get<uint32_t>();
  }
  if (!q.ok || q.pos != q.n) return -EINVAL;

  char *buf = nullptr;
  int got = 0;
  int r = cls_read(ctx, 0, static_cast<int>(object_len), &buf, &got);
  if (r < 0) return r;
  std::string object(buf ? buf : "", buf ? static_cast<size_t>(got) : 0);
  free(buf);
  Table t;
  if (!parse_table(reinterpret_cast<const uint8_t *>(object.data()), object.size(), &t)) return -EIO;

  if (first > t.nrows) return -EINVAL;
  uint32_t end = (count > t.nrows - first) ? t.nrows : first + count;
  uint64_t slice = end - first;
  auto str_bytes = [&](const Column *c) -> uint64_t { return c->off(end) - c->off(first); };

  std::vector<Predicate> bound;
  for (const auto &p : preds) {
    Predicate b{t.find(p.name), p.op, p.vtype, p.num, p.i, p.s};
    if (!b.col) return -ENOENT;
    if ((b.col->type == kStr) != (p.vtype == kStr)) return -EINVAL;
    if (b.col->type == kStr && p.op < 4) return -EINVAL;  // strings: = and != only
    bound.push_back(b);
  }
  std::vector<uint32_t> rows;
  for (uint32_t row = first; row < end; row++) {
    bool keep = true;
    for (const auto &p : bound) if (!(keep = matches(p, row))) break;
    if (keep) rows.push_back(row);
  }

  if (aggs.empty()) {
    std::vector<const Column *> cols;
    if (proj.empty()) for (const auto &c : t.cols) cols.push_back(&c);
    for (const auto &name : proj) {
      const Column *c = t.find(name);
      if (!c) return -ENOENT;
      cols.push_back(c);
    }
    uint64_t need = 12;
    for (const Column *c : cols) need += 18 + c->name.size() + (c->type == kStr ? 4 * (slice + 1) + str_bytes(c) : 8 * slice);
    if (need > kMaxAnswer) return -E2BIG;
    *answer = encode_rows(cols, rows);
    return 0;
  }
  std::vector<Agg> bound_aggs;
  for (const auto &a : aggs) {
    const Column *c = a.name.empty() ? nullptr : t.find(a.name);
    if (!a.name.empty() && !c) return -ENOENT;
    if (c && c->type == kStr && a.func != 0) return -EINVAL;  // sum/min/max of strings
    bound_aggs.push_back({a.func, c});
  }
  const Column *group = nullptr;
  if (!groupby.empty() && !(group = t.find(groupby))) return -ENOENT;
  uint64_t groups_max = group ? slice : 1;
  uint64_t need = 9 + groups_max * (kGroupOverhead + 9 + 32 * bound_aggs.size())
                  + (group && group->type == kStr ? 4 * slice + 2 * str_bytes(group) : 0);
  if (need > kMaxAnswer) return -E2BIG;
  std::map<Key, std::vector<Partial>> groups;
  for (uint32_t row : rows) {
    auto &parts = groups[key_of(group, row)];
    if (parts.empty()) parts.resize(bound_aggs.size());
    for (size_t i = 0; i < bound_aggs.size(); i++) {
      Partial &p = parts[i];
      const Column *c = bound_aggs[i].col;
      double v = (c && c->type != kStr) ? c->num(row) : 0;
      if (p.count == 0) p.min = p.max = v;
      else { if (v < p.min) p.min = v; if (v > p.max) p.max = v; }
      p.sum += v;
      p.count++;
    }
  }
  *answer = encode_groups(groups, bound_aggs.size());
  return 0;
}

int query(cls_method_context_t ctx, char *in, int inlen, char **out, int *outlen) {
  std::string answer;
  int r;
  try {  // an exception escaping into the OSD would abort it
    r = run_query(ctx, in, inlen, &answer);
  } catch (...) {
    return -ENOMEM;
  }
  if (r < 0) return r;
  *out = static_cast<char *>(malloc(answer.size() ? answer.size() : 1));
  if (!*out) return -ENOMEM;
  memcpy(*out, answer.data(), answer.size());
  *outlen = static_cast<int>(answer.size());
  return 0;
}

cls_handle_t h_class;
cls_method_handle_t h_query;

}  // namespace

extern "C" __attribute__((visibility("default"))) void __cls_init() {
  cls_log(0, "loading cls_dfslab");
  cls_register("dfslab", &h_class);
  cls_register_method(h_class, "query", DFSLAB_CLS_METHOD_RD, query, &h_query);
}
