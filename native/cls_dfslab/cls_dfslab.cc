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
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
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

// A row's value of a numeric column (unaligned: memcpy): f64, i64, or an i64 read as double.
struct LoadF64 { double operator()(const uint8_t *d, uint32_t r) const { double v; memcpy(&v, d + 8ull * r, 8); return v; } };
struct LoadI64 { int64_t operator()(const uint8_t *d, uint32_t r) const { int64_t v; memcpy(&v, d + 8ull * r, 8); return v; } };
struct LoadI64AsF64 { double operator()(const uint8_t *d, uint32_t r) const { return static_cast<double>(LoadI64()(d, r)); } };

struct Column {
  std::string name;
  uint8_t type = 0;
  const uint8_t *data = nullptr;  // f64/i64 values, or string bytes
  const uint32_t *offsets = nullptr;  // strings: nrows+1 (unaligned reads via memcpy)
  uint64_t length = 0;

  double num(uint32_t row) const { return type == kF64 ? LoadF64()(data, row) : LoadI64AsF64()(data, row); }
  int64_t i64(uint32_t row) const { return LoadI64()(data, row); }
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

// Predicates are evaluated a column at a time over the slice (the first) or over the rows still
// selected (the rest), each into a selection vector written without branches, so the compiler
// keeps the loop tight; the comparison is chosen once per predicate, not per row.
struct Less { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct LessEq { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct Greater { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct GreaterEq { template <typename T> bool operator()(T a, T b) const { return a >= b; } };
struct Equal { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct NotEqual { template <typename T> bool operator()(T a, T b) const { return a != b; } };

// rows == nullptr: test every row of [first, end); else the n rows listed. Survivors go to out.
template <typename Load, typename T, typename Cmp>
size_t keep_where(const uint8_t *data, T value, Cmp cmp, uint32_t first, uint32_t end, const uint32_t *rows, size_t n,
                  uint32_t *out) {
  Load load;
  size_t kept = 0;
  if (!rows) {
    for (uint32_t r = first; r < end; r++) { out[kept] = r; kept += cmp(load(data, r), value); }
  } else {
    for (size_t i = 0; i < n; i++) { uint32_t r = rows[i]; out[kept] = r; kept += cmp(load(data, r), value); }
  }
  return kept;
}

template <typename Load, typename T>
size_t keep_op(uint8_t op, const uint8_t *data, T v, uint32_t first, uint32_t end, const uint32_t *rows, size_t n, uint32_t *out) {
  switch (op) {
    case 0: return keep_where<Load>(data, v, Less(), first, end, rows, n, out);
    case 1: return keep_where<Load>(data, v, LessEq(), first, end, rows, n, out);
    case 2: return keep_where<Load>(data, v, Greater(), first, end, rows, n, out);
    case 3: return keep_where<Load>(data, v, GreaterEq(), first, end, rows, n, out);
    case 4: return keep_where<Load>(data, v, Equal(), first, end, rows, n, out);
    default: return keep_where<Load>(data, v, NotEqual(), first, end, rows, n, out);
  }
}

size_t keep_strings(const Predicate &p, uint32_t first, uint32_t end, const uint32_t *rows, size_t n, uint32_t *out) {
  size_t kept = 0;
  bool want_equal = p.op == 4;
  auto test = [&](uint32_t r) {
    uint32_t a = p.col->off(r), b = p.col->off(r + 1);
    bool equal = b - a == p.s.size() && memcmp(p.col->data + a, p.s.data(), p.s.size()) == 0;
    out[kept] = r;
    kept += equal == want_equal;
  };
  if (!rows) for (uint32_t r = first; r < end; r++) test(r);
  else for (size_t i = 0; i < n; i++) test(rows[i]);
  return kept;
}

// The rows of [first, end) every predicate keeps, in row order.
std::vector<uint32_t> select_rows(const std::vector<Predicate> &preds, uint32_t first, uint32_t end) {
  std::vector<uint32_t> rows(end - first);
  if (preds.empty()) {
    for (uint32_t r = first; r < end; r++) rows[r - first] = r;
    return rows;
  }
  size_t n = 0;
  bool started = false;
  for (const Predicate &p : preds) {
    const uint32_t *in = started ? rows.data() : nullptr;  // filtering in place is safe: out never passes in
    if (p.col->type == kStr) n = keep_strings(p, first, end, in, n, rows.data());
    else if (p.col->type == kI64 && p.vtype == kI64) n = keep_op<LoadI64>(p.op, p.col->data, p.i, first, end, in, n, rows.data());
    else if (p.col->type == kI64) n = keep_op<LoadI64AsF64>(p.op, p.col->data, p.num, first, end, in, n, rows.data());
    else n = keep_op<LoadF64>(p.op, p.col->data, p.num, first, end, in, n, rows.data());
    started = true;
  }
  rows.resize(n);
  return rows;
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

// The selected rows' projected columns, as a DFC1 object: sized first, then gathered in place.
std::string encode_rows(const std::vector<const Column *> &cols, const std::vector<uint32_t> &rows) {
  uint64_t header = 12;
  for (const Column *c : cols) header += 1 + 1 + c->name.size() + 16;
  std::vector<uint64_t> sizes(cols.size());
  uint64_t total = header;
  for (size_t i = 0; i < cols.size(); i++) {
    const Column *c = cols[i];
    uint64_t n = 0;
    if (c->type == kStr) {
      n = 4ull * (rows.size() + 1);
      for (uint32_t r : rows) n += c->off(r + 1) - c->off(r);
    } else {
      n = 8ull * rows.size();
    }
    sizes[i] = n;
    total += n;
  }
  std::string out(total, '\0');
  uint8_t *p = reinterpret_cast<uint8_t *>(&out[0]);
  auto put = [&p](const void *v, size_t k) { memcpy(p, v, k); p += k; };
  put("DFC1", 4);
  uint32_t nrows = static_cast<uint32_t>(rows.size()), ncols = static_cast<uint32_t>(cols.size());
  put(&nrows, 4);
  put(&ncols, 4);
  uint64_t off = header;
  for (size_t i = 0; i < cols.size(); i++) {
    uint8_t type = cols[i]->type, len = static_cast<uint8_t>(cols[i]->name.size());
    put(&type, 1);
    put(&len, 1);
    put(cols[i]->name.data(), len);
    put(&off, 8);
    put(&sizes[i], 8);
    off += sizes[i];
  }
  for (const Column *c : cols) {
    if (c->type == kStr) {
      uint32_t o = 0;
      put(&o, 4);
      for (uint32_t r : rows) { o += c->off(r + 1) - c->off(r); put(&o, 4); }
      for (uint32_t r : rows) put(c->data + c->off(r), c->off(r + 1) - c->off(r));
    } else {
      for (uint32_t r : rows) put(c->data + 8ull * r, 8);
    }
  }
  return out;
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

uint64_t key_bytes(std::string_view key) { return 2 * key.size(); }  // in the index's map, then in the answer
uint64_t key_bytes(int64_t) { return 0; }
uint64_t key_bytes(const Key &key) { return 2 * key.s.size(); }

// Each selected row's group number (gid, parallel to rows) and one row of each group. Strings
// and integers are grouped by hash on the values in place; doubles by their ordered key, which
// puts every NaN in one group. False when the groups would take more than kMaxAnswer.
template <typename Map, typename KeyOf>
bool group_by(const std::vector<uint32_t> &rows, uint64_t per_group, KeyOf key_of_row, std::vector<uint32_t> *gid,
              std::vector<uint32_t> *first_row) {
  Map index;
  uint64_t bytes = 0;
  for (size_t i = 0; i < rows.size(); i++) {
    auto key = key_of_row(rows[i]);
    auto found = index.emplace(key, static_cast<uint32_t>(first_row->size()));
    if (found.second) {
      bytes += per_group + key_bytes(key);
      if (bytes > kMaxAnswer) return false;
      first_row->push_back(rows[i]);
    }
    (*gid)[i] = found.first->second;
  }
  return true;
}

bool assign_groups(const Column *group, const std::vector<uint32_t> &rows, uint64_t per_group, std::vector<uint32_t> *gid,
                   std::vector<uint32_t> *first_row) {
  gid->assign(rows.size(), 0);
  if (!group) {
    if (!rows.empty()) first_row->push_back(rows[0]);
    return true;
  }
  if (group->type == kStr) {
    auto key = [group](uint32_t r) {
      return std::string_view(reinterpret_cast<const char *>(group->data) + group->off(r), group->off(r + 1) - group->off(r));
    };
    return group_by<std::unordered_map<std::string_view, uint32_t>>(rows, per_group + 4, key, gid, first_row);
  }
  if (group->type == kI64)
    return group_by<std::unordered_map<int64_t, uint32_t>>(rows, per_group, [group](uint32_t r) { return group->i64(r); },
                                                           gid, first_row);
  return group_by<std::map<Key, uint32_t>>(rows, per_group, [group](uint32_t r) { return key_of(group, r); }, gid, first_row);
}

// One aggregate over the selected rows into its partials (parts[g * stride + a]); count(*) and
// string columns count with value 0, as before.
void accumulate(const Column *c, const std::vector<uint32_t> &rows, const std::vector<uint32_t> &gid, size_t a, size_t stride,
                std::vector<Partial> *parts) {
  auto add = [&](auto value_of) {
    for (size_t i = 0; i < rows.size(); i++) {
      Partial &p = (*parts)[gid[i] * stride + a];
      double v = value_of(rows[i]);
      if (p.count == 0) p.min = p.max = v;
      else { if (v < p.min) p.min = v; if (v > p.max) p.max = v; }
      p.sum += v;
      p.count++;
    }
  };
  if (c && c->type == kF64) add([c](uint32_t r) { return LoadF64()(c->data, r); });
  else if (c && c->type == kI64) add([c](uint32_t r) { return LoadI64AsF64()(c->data, r); });
  else add([](uint32_t) { return 0.0; });
}

// The object, read in pieces into a buffer each OSD thread keeps from call to call. One read of
// the whole object made the OSD allocate (and the kernel fault in and zero) two fresh buffers of
// its size per call, BlueStore's and cls_read's: measured with perf on a 3-OSD cluster, page
// faults and the copies into new pages were a third of the OSDs' CPU for a 1 % select. Pieces of
// kReadPiece come from the allocator's reused memory instead. Objects above kKeepBuffer are read
// into a buffer of their own, freed after the call, so no thread keeps more than that.
const uint32_t kReadPiece = 1u << 20;
const size_t kKeepBuffer = 16u << 20;

int read_object(cls_method_context_t ctx, uint32_t object_len, std::vector<char> *own, std::string_view *object) {
  thread_local std::vector<char> kept;
  std::vector<char> &buf = object_len <= kKeepBuffer ? kept : *own;
  if (buf.size() < object_len) buf.resize(object_len);
  uint32_t done = 0;
  while (done < object_len) {
    char *piece = nullptr;
    int got = 0;
    int want = static_cast<int>(std::min(kReadPiece, object_len - done));
    int r = cls_read(ctx, static_cast<int>(done), want, &piece, &got);
    if (r < 0) { free(piece); return r; }
    if (got > 0) memcpy(buf.data() + done, piece, static_cast<size_t>(got));
    free(piece);
    if (got <= 0) break;  // the object ends here
    done += static_cast<uint32_t>(got);
  }
  *object = std::string_view(buf.data(), done);
  return 0;
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

  std::string_view object;
  std::vector<char> own;  // a big object's buffer, freed when the call returns
  int r = read_object(ctx, object_len, &own, &object);
  if (r < 0) return r;
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
  std::vector<uint32_t> rows = select_rows(bound, first, end);

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
  // What one call may allocate is bounded as groups appear (each costs its key, its partials and
  // a map node); the client asks again for smaller slices on E2BIG.
  uint64_t per_group = kGroupOverhead + 9 + 32 * bound_aggs.size();
  std::vector<uint32_t> gid;
  std::vector<uint32_t> first_row;  // a row of each group, for its key
  if (!assign_groups(group, rows, per_group, &gid, &first_row)) return -E2BIG;
  std::vector<Partial> parts(first_row.size() * bound_aggs.size());
  for (size_t a = 0; a < bound_aggs.size(); a++) accumulate(bound_aggs[a].col, rows, gid, a, bound_aggs.size(), &parts);
  std::map<Key, std::vector<Partial>> groups;
  for (size_t g = 0; g < first_row.size(); g++)
    groups[key_of(group, first_row[g])].assign(parts.begin() + g * bound_aggs.size(), parts.begin() + (g + 1) * bound_aggs.size());
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
