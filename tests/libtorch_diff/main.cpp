// ember-vs-libtorch: a differential check of Ember's elementwise ops and reductions against
// libtorch (Debian's libtorch-dev) in the same process. Every row of the op table
// (tests/support/op_table.hpp, hence every op of include/ember/ops/*_list.def) x every dtype
// (x every dtype pair, 0-d operands and Python-scalar operands for binary ops), on inputs
// that hold the edge values (NaN, +-inf, +-0, subnormals, overflow, integer limits) beside
// random ones. Both libraries must accept or refuse the same calls and agree on the result's
// dtype, shape and values (NaN for NaN, infinities and the sign of zero exactly).
//
// Built only with -Dlibtorch_compare=enabled; a developer tool (`meson test -C build
// ember-vs-libtorch`), never needed by Ember's build or CI. Known, deliberate differences
// are listed in known_differences.hpp with the reason.
//
// Usage: ember-vs-libtorch [--filter OP] [--verbose]

#include "harness.hpp"
#include "known_differences.hpp"

#include <ember/core/half.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace ediff {

const char* dt_name(DT t) {
  static const char* const names[] = {"bool", "u8", "i8", "i32", "i64", "f16", "bf16", "f32", "f64"};
  return names[static_cast<int>(t)];
}
int64_t dt_size(DT t) {
  static const int64_t sizes[] = {1, 1, 1, 4, 8, 2, 2, 4, 8};
  return sizes[static_cast<int>(t)];
}

int64_t Buf::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

template <class T>
T load(const Buf& b, int64_t i) {
  T v;
  std::memcpy(&v, b.bytes.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

double Buf::at(int64_t i) const {
  switch (dt) {
    case DT::Bool: return load<uint8_t>(*this, i) != 0;
    case DT::U8: return load<uint8_t>(*this, i);
    case DT::I8: return load<int8_t>(*this, i);
    case DT::I32: return load<int32_t>(*this, i);
    case DT::I64: return static_cast<double>(load<int64_t>(*this, i));
    case DT::F16: return static_cast<float>(ember::Half::from_bits(load<uint16_t>(*this, i)));
    case DT::BF16: return static_cast<float>(ember::BFloat16::from_bits(load<uint16_t>(*this, i)));
    case DT::F32: return load<float>(*this, i);
    case DT::F64: return load<double>(*this, i);
  }
  return 0;
}

int64_t Buf::at_int(int64_t i) const {
  switch (dt) {
    case DT::Bool: return load<uint8_t>(*this, i) != 0;
    case DT::U8: return load<uint8_t>(*this, i);
    case DT::I8: return load<int8_t>(*this, i);
    case DT::I32: return load<int32_t>(*this, i);
    case DT::I64: return load<int64_t>(*this, i);
    default: return static_cast<int64_t>(at(i));
  }
}

namespace {
template <class T>
void store(Buf& b, T v) {
  const size_t at = b.bytes.size();
  b.bytes.resize(at + sizeof(T));
  std::memcpy(b.bytes.data() + at, &v, sizeof(T));
}

}  // namespace

// ---- inputs ---------------------------------------------------------------------------------------
Buf make_buf(DT t, const std::vector<Val>& vals, std::vector<int64_t> shape) {
  Buf b;
  b.dt = t;
  b.shape = std::move(shape);
  for (const Val& v : vals) {
    switch (t) {
      case DT::Bool: store<uint8_t>(b, v.i != 0); break;
      case DT::U8: store<uint8_t>(b, static_cast<uint8_t>(v.i)); break;
      case DT::I8: store<int8_t>(b, static_cast<int8_t>(v.i)); break;
      case DT::I32: store<int32_t>(b, static_cast<int32_t>(v.i)); break;
      case DT::I64: store<int64_t>(b, v.i); break;
      case DT::F16: store<uint16_t>(b, ember::Half(static_cast<float>(v.f)).bits); break;
      case DT::BF16: store<uint16_t>(b, ember::BFloat16(static_cast<float>(v.f)).bits); break;
      case DT::F32: store<float>(b, static_cast<float>(v.f)); break;
      case DT::F64: store<double>(b, v.f); break;
    }
  }
  return b;
}

Buf second_order_weights(DT t, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<Val> v;
  for (int64_t k = 0; k < n; ++k) v.push_back({static_cast<double>(k % 7) - 2.5, 0});
  return make_buf(t, v, shape);
}

std::pair<int64_t, int64_t> int_range(DT t) {
  switch (t) {
    case DT::Bool: return {0, 1};
    case DT::U8: return {0, 255};
    case DT::I8: return {-128, 127};
    case DT::I32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The edge values of dtype t.
std::vector<Val> specials(DT t) {
  std::vector<Val> v;
  if (dt_floating(t)) {
    for (double f : {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0, -2.0, 3.0, 1e-40,
                     -1e-40, 1e-310, 6e-8, 65504.0, 70000.0, 1e30, -1e30, 1e300, -1e300, 100.0, -100.0, 20.0, -20.0,
                     88.8, -88.8, 710.0, -710.0, 0.9999, 1.0001, 1e-7, -1e-7})
      v.push_back({f, 0});
    return v;
  }
  auto [lo, hi] = int_range(t);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-2}, int64_t{3}, int64_t{-3}, int64_t{7},
                    int64_t{-7}, int64_t{100}, int64_t{-100}, int64_t{127}, int64_t{-128}, int64_t{255}, int64_t{256},
                    lo, hi, lo + 1, hi - 1})
    if (i >= lo && i <= hi) v.push_back({static_cast<double>(i), i});
  std::sort(v.begin(), v.end(), [](const Val& a, const Val& b) { return a.i < b.i; });
  v.erase(std::unique(v.begin(), v.end(), [](const Val& a, const Val& b) { return a.i == b.i; }), v.end());
  return v;
}

/// The edge values without the huge finite ones, for inputs that are summed: 1e30 + 65504 -
/// 1e30 depends on the order of the additions, which neither library promises.
std::vector<Val> summable_specials(DT t) {
  std::vector<Val> s;
  for (const Val& x : specials(t))
    if (!dt_floating(t) || !std::isfinite(x.f) || std::fabs(x.f) < 1000) s.push_back(x);
  return s;
}

std::mt19937_64 g_rng(20261205);
std::mt19937_64& rng() { return g_rng; }

/// Restarts the input generator from `what` (an op or a family of calls), so that a call's
/// inputs do not depend on which other calls ran: --filter reproduces a full run's call.
void reseed(const std::string& what) { g_rng.seed(std::hash<std::string>{}(what) ^ 20261205u); }

std::vector<Val> randoms(DT t, ember::test::Domain fdom, ember::test::Domain idom, int n) {
  std::vector<Val> v;
  auto [lo, hi] = int_range(t);
  const int64_t a = std::max<int64_t>(lo, static_cast<int64_t>(std::ceil(idom.lo)));
  const int64_t b = std::min<int64_t>(hi, static_cast<int64_t>(std::floor(idom.hi)));
  for (int k = 0; k < n; ++k) {
    if (dt_floating(t)) {
      v.push_back({std::uniform_real_distribution<double>(fdom.lo, fdom.hi)(g_rng), 0});
    } else {
      int64_t i = a <= b ? std::uniform_int_distribution<int64_t>(a, b)(g_rng) : lo;
      v.push_back({static_cast<double>(i), i});
    }
  }
  return v;
}

// ---- comparison -----------------------------------------------------------------------------------
double tolerance(DT t, bool transcendental) {
  switch (t) {
    case DT::F16: return 2e-3;
    case DT::BF16: return 1.6e-2;
    case DT::F32: return transcendental ? 1e-5 : 2e-6;
    case DT::F64: return 1e-12;
    default: return 0;
  }
}

std::string describe(const Call& c) {
  const std::string layout = std::string(c.strided ? "strided " : "") +
                             (c.inplace == 1 ? "in-place " : c.inplace == 2 ? "in-place (narrow) "
                                                           : c.inplace == 3 ? "in-place (strided) " : "");
  const std::string grad = layout + (!c.grad        ? ""
                                      : c.order == 2 ? "grad2 "
                                      : c.skip_first ? "grad (not of the first operand) "
                                                     : "grad ");
  std::string s = grad + c.op + "(";
  s += dt_name(c.a.dt);
  s += c.a.shape.empty() ? " 0-d" : "";
  if (c.kind == Kind::Binary) s += std::string(", ") + dt_name(c.b.dt) + (c.b.shape.empty() ? " 0-d" : "");
  if (c.kind == Kind::TensorScalar) {
    char buf[64];
    if (c.s.kind == ScalarArg::Float) std::snprintf(buf, sizeof buf, ", scalar %g", c.s.f);
    else if (c.s.kind == ScalarArg::Int) std::snprintf(buf, sizeof buf, ", scalar int %lld", static_cast<long long>(c.s.i));
    else std::snprintf(buf, sizeof buf, ", scalar bool %s", c.s.i ? "true" : "false");
    s += buf;
  }
  if (c.has_params) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ", params %g %g %g", c.p[0], c.p[1], c.p[2]);
    s += buf;
  }
  if (c.kind == Kind::Named) {
    s = grad + c.op +
        (c.text.empty() ? "" : " '" + c.text + "'") + "(";
    for (size_t i = 0; i < c.ins.size(); ++i) {
      s += (i ? ", " : "") + std::string(dt_name(c.ins[i].dt));
      if (c.ins[i].shape.empty()) s += " 0-d";
    }
    for (double a : c.args) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "; %g", a);
      s += buf;
    }
    return s + ")";
  }
  if (c.kind == Kind::Reduce) {
    s += ", dims [";
    for (size_t i = 0; i < c.dims.size(); ++i) s += (i ? "," : "") + std::to_string(c.dims[i]);
    s += c.keepdim ? "] keepdim" : "]";
  }
  return s + ")";
}

std::string fmt_val(const Buf& b, int64_t i) {
  char buf[64];
  if (dt_floating(b.dt)) std::snprintf(buf, sizeof buf, "%.9g", b.at(i));
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(b.at_int(i)));
  return buf;
}

/// The element of the input(s) behind output element i (elementwise calls only).
std::string inputs_at(const Call& c, int64_t i) {
  if (c.kind == Kind::Reduce) return "";
  if (c.kind == Kind::Named) {
    std::string s;
    for (size_t k = 0; k < c.ins.size(); ++k)
      if (c.ins[k].numel() > i) s += "in" + std::to_string(k) + "=" + fmt_val(c.ins[k], i) + " ";
    return s;
  }
  std::string s = "x=" + fmt_val(c.a, c.a.shape.empty() ? 0 : i);
  if (c.kind == Kind::Binary) s += " y=" + fmt_val(c.b, c.b.shape.empty() ? 0 : i);
  return s + " ";
}

void report(Report& rep, const Call& c, const std::string& category, const std::string& detail, const char* why) {
  if (why) {
    ++rep.known;
    if (rep.verbose) std::printf("known  %-10s %s: %s [%s]\n", category.c_str(), describe(c).c_str(), detail.c_str(), why);
    return;
  }
  ++rep.mismatched_calls;
  ++rep.by_category[category];
  std::printf("DIFFER %-10s %s: %s\n", category.c_str(), describe(c).c_str(), detail.c_str());
}

/// The inputs behind output element i of an elementwise call.
Element element(const Call& c, int64_t i, double ember, double torch) {
  Element e;
  e.ember = ember, e.torch = torch;
  if (c.kind == Kind::Reduce || c.kind == Kind::Named) {
    e.a = std::numeric_limits<double>::quiet_NaN();
    if (c.kind == Kind::Named && !c.ins.empty() && c.ins[0].numel() > i) e.a = c.ins[0].at(i);
    if (c.kind == Kind::Named && c.ins.size() > 1 && c.ins[1].numel() > i) e.has_b = true, e.b = c.ins[1].at(i);
    return e;
  }
  e.a = c.a.at(c.a.shape.empty() ? 0 : i);
  if (c.kind == Kind::Binary) e.has_b = true, e.b = c.b.at(c.b.shape.empty() ? 0 : i);
  if (c.kind == Kind::TensorScalar) e.has_b = true, e.b = c.s.kind == ScalarArg::Float ? c.s.f : static_cast<double>(c.s.i);
  return e;
}

/// Values of one output: integers exactly; floats within the dtype's tolerance, NaN for NaN,
/// infinities exactly, and the sign of zero.
void compare_output(Report& rep, const Call& c, const Buf& E, const Buf& T, bool transcendental, const std::string& which,
                    const Buf* ref64 = nullptr) {
  double tol = tolerance(E.dt, transcendental);
  // A gradient of a Named op sums many products (a convolution's weight, a norm's affine
  // parameters, weighted by 1..n): its rounding error scales with the largest gradient, not
  // with each element. The f32 normalisations keep the per-element test and their f64 judge;
  // in f64 they have no judge, and both libraries' input gradients cancel to a few roundings
  // of rstd * dy (rstd reaches 1/sqrt(eps) for a row of nearly equal values).
  double scale = 0;
  if (c.grad && c.kind == Kind::Named && (!is_normalisation(c.op) || T.dt == DT::F64) && dt_floating(T.dt)) {
    for (int64_t i = 0; i < T.numel(); ++i)
      if (std::isfinite(T.at(i))) scale = std::max(scale, std::fabs(T.at(i)));
    tol *= 4;
  }
  // Per category: differing elements, the first one not covered by a known rule, and the
  // rule that covered the others.
  struct Tally {
    int n = 0;
    std::string first_unknown;
    const char* why = nullptr;
  } value, zero;
  auto note = [&](Tally& tl, const char* category, int64_t i, double x, double y) {
    ++tl.n;
    Element el = element(c, i, x, y);
    el.index = i;
    el.output = which.empty() ? 0 : std::stoi(which.substr(which.find_last_of(' ') + 1));
    if (ref64 && ref64->numel() == E.numel()) el.ref64 = ref64->at(i);
    const char* why = known_element(c, E.dt, category, el);
    if (why) {
      if (!tl.why) tl.why = why;
    } else if (tl.first_unknown.empty()) {
      tl.first_unknown = "at " + std::to_string(i) + ": " + inputs_at(c, i) + "Ember " + fmt_val(E, i) +
                         ", libtorch " + fmt_val(T, i);
      if (!std::isnan(el.ref64)) {
        char buf[48];
        std::snprintf(buf, sizeof buf, " (f64: %.9g)", el.ref64);
        tl.first_unknown += buf;
      }
    }
  };
  for (int64_t i = 0; i < E.numel(); ++i) {
    if (!dt_floating(E.dt)) {
      if (E.at_int(i) != T.at_int(i))
        note(value, "value", i, static_cast<double>(E.at_int(i)), static_cast<double>(T.at_int(i)));
      continue;
    }
    const double x = E.at(i), y = T.at(i);
    bool ok;
    if (std::isnan(y) || std::isnan(x)) ok = std::isnan(x) && std::isnan(y);
    else if (std::isinf(y) || std::isinf(x)) ok = x == y;
    else ok = std::fabs(x - y) <= tol * (1 + std::max(std::fabs(y), scale));
    if (!ok) note(value, "value", i, x, y);
    else if (x == 0 && y == 0 && std::signbit(x) != std::signbit(y)) note(zero, "zero-sign", i, x, y);
  }
  for (auto [tl, cat] : {std::pair<Tally*, const char*>{&value, "value"}, {&zero, "zero-sign"}}) {
    if (tl->n == 0) continue;
    const std::string count = std::to_string(tl->n) + " of " + std::to_string(E.numel()) + " differ" + which;
    if (tl->first_unknown.empty()) report(rep, c, cat, count, tl->why);
    else report(rep, c, cat, count + "; first unexplained " + tl->first_unknown, nullptr);
  }
}

/// Returns whether both libraries accepted the call.
bool compare(Report& rep, const Call& c, bool transcendental) {
  ++rep.calls;
  const Result e = run_ember(c);
  const Result t = run_torch(c);
  if (e.ok != t.ok) {
    std::string msg = e.ok ? "Ember accepts (-> " + std::string(dt_name(e.out.dt)) + "), libtorch refuses: " + t.error
                           : "libtorch accepts (-> " + std::string(dt_name(t.out.dt)) + "), Ember refuses: " + e.error;
    if (msg.size() > 240) msg.resize(240);
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    report(rep, c, "accept", msg, known_call(c, "accept", e, t));
    return false;
  }
  if (!e.ok) {
    // A gradient call is made for operands both libraries accept: refusing it in both would
    // leave the gradient unchecked.
    if (c.grad) report(rep, c, "grad", "both refuse the gradient call: " + e.error.substr(0, 160), nullptr);
    return false;
  }
  if (e.out.dt != t.out.dt) {
    report(rep, c, "dtype", std::string("Ember ") + dt_name(e.out.dt) + ", libtorch " + dt_name(t.out.dt),
           known_call(c, "dtype", e, t));
    return true;
  }
  if (e.out.shape != t.out.shape) {
    auto dims = [](const Buf& b) {
      std::string d = "[";
      for (size_t i = 0; i < b.shape.size(); ++i) d += (i ? ", " : "") + std::to_string(b.shape[i]);
      return d + "]";
    };
    report(rep, c, "shape", "Ember " + dims(e.out) + ", libtorch " + dims(t.out), known_call(c, "shape", e, t));
    return true;
  }
  // An f32 normalisation is also run in f64 by Ember, to judge rounding differences.
  Result r64;
  if (c.kind == Kind::Named && is_normalisation(c.op) && e.out.dt == DT::F32) {
    Call c64 = c;
    for (Buf& b : c64.ins) {
      std::vector<Val> v;
      for (int64_t i = 0; i < b.numel(); ++i) v.push_back({b.at(i), 0});
      b = make_buf(DT::F64, v, b.shape);
    }
    r64 = run_ember(c64);
  }
  compare_output(rep, c, e.out, t.out, transcendental, "", r64.ok ? &r64.out : nullptr);
  if (e.more.size() != t.more.size()) {
    report(rep, c, "outputs", std::to_string(e.more.size() + 1) + " / " + std::to_string(t.more.size() + 1), nullptr);
    return true;
  }
  for (size_t k = 0; k < e.more.size(); ++k) {
    if (e.more[k].dt != t.more[k].dt || e.more[k].shape != t.more[k].shape) {
      report(rep, c, "dtype", "output " + std::to_string(k + 1) + ": Ember " + dt_name(e.more[k].dt) + ", libtorch " +
                                  dt_name(t.more[k].dt) + " (or the shapes differ)", nullptr);
      continue;
    }
    const Buf* ref = r64.ok && r64.more.size() == e.more.size() ? &r64.more[k] : nullptr;
    compare_output(rep, c, e.more[k], t.more[k], transcendental, " (output " + std::to_string(k + 1) + ")", ref);
  }
  return true;
}

// ---- the calls ------------------------------------------------------------------------------------
bool wanted(const std::string& filter, const std::string& op) { return filter.empty() || filter == op; }

const char* const kParamOps[] = {"leaky_relu", "elu", "celu", "logit", "softplus", "hardtanh", "clamp", "nan_to_num",
                                 "digamma"};

bool takes_params(const std::string& op) {
  return std::find(std::begin(kParamOps), std::end(kParamOps), op) != std::end(kParamOps);
}

void unary_calls(Report& rep, const std::string& filter) {
  for (const auto& row : ember::test::kUnaryRows) {
    const std::string op = ember::ops::name(row.op);
    if (!wanted(filter, op)) continue;
    reseed("unary " + op);
    const bool transcendental = row.tol_f32 > ember::test::kDefaultTolF32;
    for (DT t : kAllDT) {
      std::vector<Val> v = specials(t);
      std::vector<Val> r = randoms(t, row.dom, row.dom, 64);
      v.insert(v.end(), r.begin(), r.end());
      Call c;
      c.kind = Kind::Unary;
      c.op = op;
      c.a = make_buf(t, v, {static_cast<int64_t>(v.size())});
      compare(rep, c, transcendental);
      if (takes_params(op)) {
        c.has_params = true;
        c.p[0] = row.params.a, c.p[1] = row.params.b, c.p[2] = row.params.c;
        compare(rep, c, transcendental);
      }
      c.has_params = false;
      c.a = make_buf(t, {v[v.size() - 1]}, {});  // 0-d
      compare(rep, c, transcendental);
    }
  }
}

bool int_div_like(const std::string& op) {
  return op == "div_trunc" || op == "div_floor" || op == "remainder" || op == "fmod";
}

/// Pairs libtorch cannot take without a crash or a refusal of the whole call (integer
/// division by zero raises SIGFPE or ZeroDivisionError, min / -1 traps; integers to negative
/// integer powers are refused): tested on their own in the edge cases, not here.
bool skip_pair(const std::string& op, DT ta, DT tb, const Val& a, const Val& b) {
  const bool integral = !dt_floating(ta) && !dt_floating(tb);
  if (!integral) return false;
  if (int_div_like(op) && (b.i == 0 || (b.i == -1 && a.i == int_range(ta).first))) return true;
  if (op == "pow" && b.i < 0) return true;
  return false;
}

void binary_calls(Report& rep, const std::string& filter) {
  for (const auto& row : ember::test::kBinaryRows) {
    const std::string op = ember::ops::name(row.op);
    if (!wanted(filter, op)) continue;
    reseed("binary " + op);
    const bool transcendental = row.tol_f32 > ember::test::kDefaultTolF32;
    for (DT ta : kAllDT) {
      for (DT tb : kAllDT) {
        std::vector<Val> sa = specials(ta), sb = specials(tb);
        std::vector<Val> xa, xb;
        for (const Val& a : sa)
          for (const Val& b : sb) xa.push_back(a), xb.push_back(b);
        std::vector<Val> ra = randoms(ta, row.a, row.ia, 64), rb = randoms(tb, row.b, row.ib, 64);
        xa.insert(xa.end(), ra.begin(), ra.end());
        xb.insert(xb.end(), rb.begin(), rb.end());
        std::vector<Val> ka, kb;
        for (size_t i = 0; i < xa.size(); ++i)
          if (!skip_pair(op, ta, tb, xa[i], xb[i])) ka.push_back(xa[i]), kb.push_back(xb[i]);
        Call c;
        c.kind = Kind::Binary;
        c.op = op;
        const int64_t n = static_cast<int64_t>(ka.size());
        c.a = make_buf(ta, ka, {n});
        c.b = make_buf(tb, kb, {n});
        compare(rep, c, transcendental);
        // A 0-d tensor operand: it promotes by category only (not a Python scalar).
        for (const Val& b0 : {rb[0], sb[sb.size() / 2]}) {
          std::vector<Val> a1, b1{b0};
          for (const Val& a : ka)
            if (!skip_pair(op, ta, tb, a, b0)) a1.push_back(a);
          c.a = make_buf(ta, a1, {static_cast<int64_t>(a1.size())});
          c.b = make_buf(tb, b1, {});
          compare(rep, c, transcendental);
        }
      }
      // Python scalars.
      std::vector<ScalarArg> scalars = {{ScalarArg::Bool, 0, 1}, {ScalarArg::Int, 0, 3}, {ScalarArg::Int, 0, -2},
                                        {ScalarArg::Float, 2.5, 0}, {ScalarArg::Float, -0.5, 0},
                                        {ScalarArg::Float, kNaN, 0}, {ScalarArg::Float, 1e10, 0},
                                        {ScalarArg::Int, 0, 300}};
      for (const ScalarArg& s : scalars) {
        std::vector<Val> a1;
        const Val sv{s.kind == ScalarArg::Float ? s.f : static_cast<double>(s.i), s.i};
        const DT st = s.kind == ScalarArg::Float ? DT::F64 : s.kind == ScalarArg::Int ? DT::I64 : DT::Bool;
        std::vector<Val> v = specials(ta), r = randoms(ta, row.a, row.ia, 32);
        v.insert(v.end(), r.begin(), r.end());
        for (const Val& a : v)
          if (!skip_pair(op, ta, st, a, sv)) a1.push_back(a);
        if (s.kind == ScalarArg::Int && s.i < 0 && (op == "bitwise_left_shift" || op == "bitwise_right_shift")) continue;
        if (!dt_floating(ta) && s.kind != ScalarArg::Float && op == "pow" && s.i < 0) continue;
        Call c;
        c.kind = Kind::TensorScalar;
        c.op = op;
        c.s = s;
        c.a = make_buf(ta, a1, {static_cast<int64_t>(a1.size())});
        compare(rep, c, transcendental);
      }
    }
  }
}

/// An elementwise or reduction gradient call (c.grad), and for f64 operands the same call at
/// second order.
void compare_both_orders(Report& rep, Call c) {
  compare(rep, c, true);
  if (c.a.dt != DT::F64 || (c.kind == Kind::Binary && c.b.dt != DT::F64)) return;
  c.order = 2;
  compare(rep, c, true);
}

bool differentiable_reduction(const std::string& op) {
  return op != "all" && op != "any" && op != "count_nonzero";
}

void reduce_calls(Report& rep, const std::string& filter) {
  for (const auto& row : ember::test::kReduceRows) {
    const std::string op = ember::ops::name(row.op);
    if (!wanted(filter, op)) continue;
    reseed("reduce " + op);
    const bool one_dim_only = op == "prod" || op == "all" || op == "any";
    for (DT t : kAllDT) {
      // 8 rows of 6: rows 0-3 random, rows 4-7 carry the edge values.
      std::vector<Val> v = randoms(t, row.dom, row.idom, 24);
      const std::vector<Val> s = summable_specials(t);
      for (int k = 0; k < 24; ++k) v.push_back(s[static_cast<size_t>(k) % s.size()]);
      if (op == "prod" && dt_floating(t))  // keep products of the random rows finite and exact enough
        for (int k = 24; k < 48; ++k) v[static_cast<size_t>(k)].f = std::fmod(v[static_cast<size_t>(k)].f, 4.0);
      struct D {
        std::vector<int64_t> dims;
        bool keepdim;
      };
      std::vector<D> ds = {{{}, false}, {{0}, false}, {{1}, false}, {{1}, true}, {{-1}, false}};
      if (!one_dim_only) ds.push_back({{0, 1}, false}), ds.push_back({{0, 1}, true});
      for (const D& d : ds) {
        if (op == "count_nonzero" && d.keepdim) continue;
        Call c;
        c.kind = Kind::Reduce;
        c.op = op;
        c.a = make_buf(t, v, {8, 6});
        c.dims = d.dims;
        c.keepdim = d.keepdim;
        const bool accepted = compare(rep, c, true);
        // The gradients (amax/amin split among ties, prod's exclusive products around zeros,
        // nansum's zeros at NaN), and in f64 the second-order ones.
        if (accepted && (t == DT::F32 || t == DT::F64) && differentiable_reduction(op)) {
          c.grad = true;
          compare_both_orders(rep, c);
        }
      }
      Call c;  // 0-d input
      c.kind = Kind::Reduce;
      c.op = op;
      c.a = make_buf(t, {v[3]}, {});
      compare(rep, c, true);
    }
  }
}

/// Values with ties (a quarter-step grid) in rows 0-3 and the edge values (without the huge
/// finite ones, whose sums depend on the order of additions) in rows 4-7: an 8 x 6 matrix.
Buf tie_matrix(DT t) {
  std::vector<Val> v;
  std::uniform_int_distribution<int> d(-8, 8);
  for (int k = 0; k < 24; ++k) {
    const int q = d(g_rng);
    if (dt_floating(t)) v.push_back({q / 4.0, 0});
    else if (t == DT::Bool) v.push_back({double(q > 0), q > 0});
    else if (t == DT::U8) v.push_back({double(q + 8), q + 8});
    else v.push_back({double(q), q});
  }
  const std::vector<Val> s = summable_specials(t);
  for (int k = 0; k < 24; ++k) v.push_back(s[static_cast<size_t>(k) % s.size()]);
  return make_buf(t, v, {8, 6});
}

Buf random_buf(DT t, std::vector<int64_t> shape, ember::test::Domain dom, bool edges) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<Val> v = randoms(t, dom, dom, static_cast<int>(n));
  if (edges && dt_floating(t)) {  // a few edge values among them
    std::vector<Val> s = specials(t);
    for (size_t k = 0; k < v.size(); k += 5) v[k] = s[(k / 5) % s.size()];
  }
  return make_buf(t, v, std::move(shape));
}

int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g_rng); }

Buf random_operand(DT t, std::vector<int64_t> shape, bool nonfinite) {
  Buf b = random_buf(t, std::move(shape), {-2, 2}, false);
  if (!nonfinite || b.numel() < 3) return b;
  std::vector<Val> v;
  for (int64_t i = 0; i < b.numel(); ++i) v.push_back({b.at(i), 0});
  for (double s : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()})
    v[static_cast<size_t>(pick(0, static_cast<int>(b.numel() - 1)))].f = s;
  return make_buf(t, v, b.shape);
}

/// The Named ops whose gradients are compared as well.
bool takes_gradient(const std::string& op) {
  static const char* const ops[] = {
      "cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax", "cummax", "cummin", "max_dim", "min_dim",
      "var", "std", "logsumexp", "sort", "topk", "kthvalue", "where", "lerp", "addcmul", "addcdiv",
      "clamp_tensors", "matmul", "cat", "stack", "index_select", "gather", "scatter_add", "masked_select",
      "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
      "interpolate", "pad", "cross_entropy", "nll_loss", "smooth_l1_loss", "huber_loss", "bce_with_logits",
      "kl_div", "grid_sample", "einsum", "unfold", "fold", "embedding_bag", "layer_norm", "group_norm", "batch_norm"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

/// Whether a gradient call is compared at second order too: f64 operands.
bool second_order(const Call& c) {
  for (const Buf& b : c.ins)
    if (dt_floating(b.dt) && b.dt != DT::F64) return false;
  return true;
}

void named_call(Report& rep, const std::string& filter, const std::string& op, std::vector<Buf> ins,
                std::vector<double> args, bool transcendental, bool gradients) {
  if (!wanted(filter, op)) return;
  Call c;
  c.kind = Kind::Named;
  c.op = op;
  c.ins = std::move(ins);
  c.args = std::move(args);
  const bool accepted = compare(rep, c, transcendental);
  if (accepted) {  // again with Ember's operands in strided layouts
    Call s = c;
    s.strided = true;
    compare(rep, s, transcendental);
  }
  // The gradients too, for differentiable ops on f32/f64 operands that both accept (libtorch
  // 1.13's max-pool backward corrupts the heap for a window that reads only padding).
  bool floating = false, narrow = false;
  for (const Buf& b : c.ins) {
    floating = floating || dt_floating(b.dt);
    narrow = narrow || b.dt == DT::F16 || b.dt == DT::BF16;
  }
  if (accepted && floating && !narrow && gradients) {
    c.grad = true;
    compare(rep, c, transcendental);
    Call s = c;
    s.strided = true;
    compare(rep, s, transcendental);
    // Again with the first operand as plain data, where another operand can take a gradient.
    int others = 0;
    for (size_t i = 1; i < c.ins.size(); ++i) others += dt_floating(c.ins[i].dt) && differentiable_input(c, i);
    if (others > 0 && dt_floating(c.ins[0].dt)) {
      c.skip_first = true;
      compare(rep, c, transcendental);
      c.skip_first = false;
    }
    // The second-order gradients, in f64 (double backward: gradient penalties, meta-learning).
    if (second_order(c)) {
      c.order = 2;
      compare(rep, c, transcendental);
    }
  }
}

void named(Report& rep, const std::string& filter, const std::string& op, std::vector<Buf> ins, std::vector<double> args,
           bool transcendental = true) {
  named_call(rep, filter, op, std::move(ins), std::move(args), transcendental, takes_gradient(op));
}

void named_calls(Report& rep, const std::string& filter) {
  reseed("named");
  for (DT t : kAllDT) {
    const Buf x = tie_matrix(t);
    for (double dim : {0.0, 1.0}) {
      for (const char* op : {"cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax", "cummax", "cummin",
                             "logsumexp"})
        named(rep, filter, op, {x}, {dim, 0});
      for (const char* op : {"argmax", "argmin", "max_dim", "min_dim"})
        for (double keep : {0.0, 1.0}) named(rep, filter, op, {x}, {dim, keep});
      for (const char* op : {"var", "std"})
        for (double corr : {0.0, 1.0, 2.0}) named(rep, filter, op, {x}, {dim, corr, 0});
      for (double desc : {0.0, 1.0}) named(rep, filter, "sort", {x}, {dim, desc});
      for (double largest : {0.0, 1.0}) named(rep, filter, "topk", {x}, {3, dim, largest});
      named(rep, filter, "kthvalue", {x}, {2, dim});
    }
    for (double d : {0.0, 2.0, -1.0}) named(rep, filter, "round_decimals", {random_buf(t, {40}, {-300, 300})}, {d});
    for (DT to : kAllDT) named(rep, filter, "to", {random_buf(t, {60}, {-300, 300})}, {static_cast<double>(to)}, false);
    for (double v : {0.5, 2.0}) {
      named(rep, filter, "addcmul", {random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {-5, 5})},
            {v}, false);
      named(rep, filter, "addcdiv", {random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {0.5, 5})},
            {v}, false);
    }
    named(rep, filter, "clamp_tensors",
          {random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {-3, 0}), random_buf(t, {30}, {0, 3})}, {}, false);
    if (dt_floating(t))
      named(rep, filter, "lerp", {random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {-5, 5}), random_buf(t, {30}, {-1, 2})}, {},
            false);
    {  // libtorch 1.13's CPU unique mis-sorts NaN (NaNs land mid-way with count 0): none here
      std::vector<Val> v;
      for (int64_t i = 0; i < x.numel(); ++i)
        if (!std::isnan(x.at(i))) v.push_back({x.at(i), x.at_int(i)});
      named(rep, filter, "unique", {make_buf(t, v, {static_cast<int64_t>(v.size())})}, {});
    }
    named(rep, filter, "nonzero", {x}, {});
    named(rep, filter, "masked_select", {x, random_buf(DT::Bool, {8, 6}, {0, 1})}, {});
    named(rep, filter, "masked_select", {x, random_buf(DT::Bool, {6}, {0, 1})}, {});  // a broadcast mask
    for (double dim : {0.0, 1.0}) {
      named(rep, filter, "index_select", {x, random_buf(DT::I64, {5}, {0, 5})}, {dim});
      named(rep, filter, "gather", {x, random_buf(DT::I64, {8, 6}, {0, 5})}, {dim});
      named(rep, filter, "scatter_add", {x, random_buf(DT::I64, {4, 3}, {0, 5}), random_buf(t, {4, 3}, {-3, 3})}, {dim});
      // Out-of-range indices (negative, or the dim's size): both must refuse.
      for (int64_t bad : {int64_t{-1}, int64_t{dim == 0 ? 8 : 6}}) {
        const Buf idx = make_buf(DT::I64, {{0, 0}, {0, bad}, {0, 1}}, {3});
        named(rep, filter, "index_select", {x, idx}, {dim});
        std::vector<Val> gv(48, Val{0, 1});
        gv[5] = {0, bad};
        named(rep, filter, "gather", {x, make_buf(DT::I64, gv, {8, 6})}, {dim});
        named(rep, filter, "scatter_add", {x, make_buf(DT::I64, gv, {8, 6}), random_buf(t, {8, 6}, {-3, 3})}, {dim});
      }
    }
    for (double d : {-1.0, static_cast<double>(t)}) {
      named(rep, filter, "linspace", {}, {-2.5, 7.0, 11, d});
      named(rep, filter, "linspace", {}, {0, 1, 1, d});
      named(rep, filter, "linspace", {}, {3, -3, 7, d});
      for (double integral : {0.0, 1.0}) {
        named(rep, filter, "arange", {}, {0, 10, 3, integral, d});
        named(rep, filter, "arange", {}, {5, -4, -2, integral, d});
      }
      named(rep, filter, "arange", {}, {0, 1, 0.1, 0, d});
      named(rep, filter, "arange", {}, {-1.5, 2.25, 0.25, 0, d});
      named(rep, filter, "arange", {}, {1, 2.5, 0.3, 0, d});
    }
    for (DT u : kAllDT) {
      for (double dim : {0.0, 1.0})
        for (const char* op : {"cat", "stack"})
          named(rep, filter, op, {random_buf(t, {2, 3}, {-5, 5}), random_buf(u, {2, 3}, {-5, 5})}, {dim});
      named(rep, filter, "where", {random_buf(DT::Bool, {30}, {0, 1}), random_buf(t, {30}, {-5, 5}), random_buf(u, {30}, {-5, 5})},
            {}, false);
      named(rep, filter, "matmul", {random_buf(t, {3, 4}, {-3, 3}), random_buf(u, {4, 5}, {-3, 3})}, {}, false);
    }
  }
}

/// Losses and normalisations on random configurations (class-index and probability targets,
/// ignore_index hits, class weights, label smoothing, every reduction; affine or not,
/// training or not).
void loss_calls(Report& rep, const std::string& filter) {
  reseed("losses");
  std::mt19937_64 g(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  auto d = [](int v) { return static_cast<double>(v); };
  const Buf none = make_buf(DT::F32, {}, {0});
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 40; ++n) {
      const int batch = pick(1, 5), classes = pick(2, 6), red = pick(0, 2), extra = pick(0, 1);
      std::vector<int64_t> xs = {batch, classes}, ts = {batch};
      if (extra) xs.push_back(3), ts.push_back(3);  // (N, C, d) with (N, d) targets
      const Buf x = random_buf(t, xs, {-4, 4}, false);
      const Buf target = random_buf(DT::I64, ts, {0, static_cast<double>(classes - 1)}, false);
      std::vector<Val> tv;  // a few targets hit ignore_index (1)
      for (int64_t i = 0; i < target.numel(); ++i) tv.push_back({0, pick(0, 4) == 0 ? 1 : target.at_int(i)});
      const Buf target_ignore = make_buf(DT::I64, tv, ts);
      const Buf weight = random_buf(t, {classes}, {0.1, 2}, false);
      for (double smoothing : {0.0, 0.2}) {
        named(rep, filter, "cross_entropy", {x, target}, {-100, d(red), smoothing}, false);
        named(rep, filter, "cross_entropy", {x, target_ignore, weight}, {1, d(red), smoothing}, false);
      }
      // Probability targets (rows summing to 1).
      Buf probs = random_buf(t, xs, {0, 1}, false);
      named(rep, filter, "cross_entropy", {x, probs}, {-100, d(red), n % 2 ? 0.1 : 0.0}, false);
      named(rep, filter, "cross_entropy", {x, probs, weight}, {-100, d(red), 0.0}, false);
      named(rep, filter, "nll_loss", {x, target_ignore, n % 2 ? weight : none}, {1, d(red)}, false);
      const Buf y = random_buf(t, xs, {-4, 4}, false);
      for (double beta : {0.0, 0.5, 1.0, 2.0}) {
        named(rep, filter, "smooth_l1_loss", {x, y}, {d(red), beta}, false);
        if (beta > 0) named(rep, filter, "huber_loss", {x, y}, {d(red), beta}, false);
      }
      const Buf p01 = random_buf(t, xs, {0, 1}, false);
      named(rep, filter, "bce_with_logits", {x, p01}, {d(red)}, false);
      named(rep, filter, "bce_with_logits", {x, p01, none, random_buf(t, {xs[1]}, {0.2, 3}, false)}, {d(red)}, false);
      if (!extra) named(rep, filter, "bce_with_logits", {x, p01, random_buf(t, xs, {0, 2}, false)}, {d(red)}, false);
      named(rep, filter, "kl_div", {x, p01}, {d(red), 0}, false);
      named(rep, filter, "kl_div", {x, y}, {d(red), 1}, false);
      // Normalisation: (N, C, H, W) with C a multiple of the groups.
      const int groups = pick(1, 3), c = groups * pick(1, 2), h = pick(1, 4), w = pick(1, 4);
      const Buf img = random_buf(t, {batch, c, h, w}, {-3, 3}, false);
      const Buf gamma = random_buf(t, {c}, {0.5, 2}, false), beta_c = random_buf(t, {c}, {-1, 1}, false);
      named(rep, filter, "group_norm", {img, gamma, beta_c}, {d(groups), 1e-5}, false);
      named(rep, filter, "group_norm", {img}, {d(groups), 0.1}, false);
      const int k = pick(1, 3);
      std::vector<int64_t> ln_shape(img.shape.end() - k, img.shape.end());
      named(rep, filter, "layer_norm", {img, random_buf(t, ln_shape, {0.5, 2}, false), random_buf(t, ln_shape, {-1, 1}, false)},
            {d(k), 1e-5}, false);
      named(rep, filter, "layer_norm", {img}, {d(k), 1e-3}, false);
      const Buf rm = random_buf(t, {c}, {-1, 1}, false), rv = random_buf(t, {c}, {0.5, 2}, false);
      for (int training : {0, 1}) {
        named(rep, filter, "batch_norm", {img, rm, rv, gamma, beta_c}, {d(training), 0.1, 1e-5}, false);
        named(rep, filter, "batch_norm", {img, rm, rv}, {d(training), 0.3, 1e-3}, false);
      }
    }
  }
}

/// Sampling, folding, einsum, batched matmul shapes and embedding bags.
void misc_calls(Report& rep, const std::string& filter) {
  reseed("misc");
  std::mt19937_64 g(13);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  auto d = [](int v) { return static_cast<double>(v); };
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 40; ++n) {
      const int h = pick(1, 6), w = pick(1, 6);
      const Buf x = random_buf(t, {2, pick(1, 3), h, w}, {-2, 2}, false);
      // Grid points inside and beyond [-1, 1] (padding modes), some exactly on pixel centres.
      std::vector<Val> gv;
      const int gh = pick(1, 4), gw = pick(1, 4);
      for (int k = 0; k < 2 * gh * gw * 2; ++k)
        gv.push_back({pick(0, 3) == 0 ? pick(-4, 4) / 4.0 : std::uniform_real_distribution<double>(-1.6, 1.6)(g), 0});
      const Buf grid = make_buf(t, gv, {2, gh, gw, 2});
      named(rep, filter, "grid_sample", {x, grid}, {d(pick(0, 2)), d(pick(0, 2)), d(pick(0, 1))}, false);
      const int kh = pick(1, 3), kw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2), ph = pick(0, 1), pw = pick(0, 1),
                sh = pick(1, 2), sw = pick(1, 2);
      named(rep, filter, "unfold", {x}, {d(kh), d(kw), d(dh), d(dw), d(ph), d(pw), d(sh), d(sw)}, false);
      // fold: columns for an (oh, ow) image with the same geometry.
      const int oh = pick(2, 6), ow = pick(2, 6);
      const int lh = (oh + 2 * ph - dh * (kh - 1) - 1) / sh + 1, lw = (ow + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
      if (lh > 0 && lw > 0)
        named(rep, filter, "fold", {random_buf(t, {2, 2 * kh * kw, lh * lw}, {-2, 2}, false)},
              {d(oh), d(ow), d(kh), d(kw), d(dh), d(dw), d(ph), d(pw), d(sh), d(sw)}, false);
    }
    // matmul: PyTorch's rules for 1-D, 2-D and broadcast batches.
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
        {{4}, {4}}, {{4}, {4, 3}}, {{2, 4}, {4}}, {{5, 2, 4}, {4}}, {{4}, {5, 4, 3}}, {{5, 2, 4}, {4, 3}},
        {{2, 4}, {5, 4, 3}}, {{1, 2, 4}, {5, 4, 3}}, {{3, 1, 2, 4}, {5, 4, 3}}, {{2, 0, 4}, {4, 3}}, {{2, 4}, {4, 0}},
        {{2, 0}, {0, 3}}, {{4}, {3}}, {{2, 4}, {3, 5}}, {{2, 2, 4}, {3, 4, 3}}};
    for (const auto& [sa, sb] : shapes)
      named(rep, filter, "matmul", {random_buf(t, sa, {-2, 2}, false), random_buf(t, sb, {-2, 2}, false)}, {}, false);
    // einsum over common contractions (and a repeated index, a reduction, a transpose).
    const std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>> eqs = {
        {"ij,jk->ik", {{2, 3}, {3, 4}}}, {"bij,bjk->bik", {{2, 2, 3}, {2, 3, 4}}}, {"i,i->", {{5}, {5}}},
        {"i,j->ij", {{3}, {4}}}, {"ij->ji", {{2, 3}}}, {"ii->i", {{3, 3}}}, {"ii", {{3, 3}}}, {"ij->", {{2, 3}}},
        {"bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}}, {"...ij,...jk->...ik", {{2, 2, 3}, {3, 4}}},
        {"ij,ij->i", {{2, 3}, {2, 3}}}, {"ijk,k->ij", {{2, 3, 4}, {4}}}, {"...ii->...i", {{2, 3, 3}}},
        {"bii->b", {{2, 3, 3}}}, {"iij->j", {{2, 2, 3}}}, {"ii,i->i", {{3, 3}, {3}}}, {"i...,i...->...", {{3, 2, 4}, {3, 4}}},
        {"ij...,jk...->ik...", {{2, 3, 4}, {3, 5, 1}}}, {"...ij,...jk->ik", {{5, 2, 3}, {7, 1, 3, 4}}},
        {"...ij,...jk", {{5, 2, 3}, {7, 1, 3, 4}}}, {"...", {{2, 3}}}, {"i...->...", {{2, 3, 4}}},
        {"ba,ab->", {{3, 2}, {2, 3}}}, {"ii->i", {{2, 3}}}, {"ij,jk->ik", {{2, 3}, {4, 5}}},
        // Three and four operands (left to right), broadcasting and clashing sizes among them.
        {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}}, {"ij,jk,kl", {{2, 3}, {3, 4}, {4, 2}}},
        {"bij,bjk,bki->b", {{2, 3, 4}, {2, 4, 5}, {2, 5, 3}}}, {"i,i,i->", {{5}, {5}, {5}}},
        {"i,j,k", {{2}, {3}, {4}}}, {"ij,j,j->i", {{2, 3}, {1}, {3}}}, {"ii,ij,j->", {{3, 3}, {3, 4}, {4}}},
        {"...ij,...jk,kl->...il", {{7, 1, 2, 3}, {5, 3, 4}, {4, 2}}}, {"ab,bc,cd,de->ea", {{2, 3}, {3, 4}, {4, 2}, {2, 3}}},
        {"ij,jk,kl->il", {{2, 3}, {3, 4}, {3, 5}}}, {"ij,jk,kl->il", {{2, 3}, {3, 4}}}};
    for (const auto& [eq, shp] : eqs) {
      std::vector<Buf> ops;
      for (const auto& s : shp) ops.push_back(random_buf(t, s, {-2, 2}, false));
      if (!wanted(filter, "einsum")) continue;
      Call c;
      c.kind = Kind::Named;
      c.op = "einsum";
      c.text = eq;
      c.ins = ops;
      compare(rep, c, true);
    }
    // embedding_bag: bags by offsets (an empty bag included), sum / mean / max.
    const Buf weight = random_buf(t, {7, 3}, {-2, 2}, false);
    const Buf idx = make_buf(DT::I64, {{0, 1}, {0, 4}, {0, 4}, {0, 0}, {0, 6}, {0, 2}, {0, 3}}, {7});
    for (int mode = 0; mode < 3; ++mode) {
      named(rep, filter, "embedding_bag", {idx, weight, make_buf(DT::I64, {{0, 0}, {0, 2}, {0, 2}, {0, 5}}, {4})},
            {d(mode), 0}, false);
      named(rep, filter, "embedding_bag", {idx, weight, make_buf(DT::I64, {{0, 0}, {0, 3}, {0, 7}}, {3})}, {d(mode), 1},
            false);
    }
  }
}

/// A gradient call again with the op in place (Call::inplace): on the whole non-leaf, through
/// a narrowed view and through a strided one; in f64 also at second order through the view.
void inplace_variants(Report& rep, const Call& c, DT t) {
  static const char* const with_params[] = {"leaky_relu", "elu", "celu", "hardtanh", "clamp"};
  if (c.has_params && std::find(std::begin(with_params), std::end(with_params), c.op) == std::end(with_params)) return;
  for (int mode : {1, 2, 3}) {
    Call d = c;
    d.inplace = mode;
    compare(rep, d, true);
    if (t == DT::F64 && mode == 2) {
      d.order = 2;
      compare(rep, d, true);
    }
  }
}

/// Gradients of every differentiable elementwise op at the edge values (f32, f64): the
/// conventions at kinks, ties, zeros and non-finite points (abs at 0, clamp at its bounds,
/// maximum on ties, pow at 0, ...) are where autograd formulas part.
void grad_calls(Report& rep, const std::string& filter) {
  auto differentiable = [](const std::string& op) {
    static const char* const no[] = {"isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not", "eq", "ne", "lt", "le",
                                     "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                                     "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                                     "relu_backward", "gelu_backward", "silu_backward", "div_trunc", "div_floor",
                                     // libtorch has no derivative for it (Ember's: tests/test_special_ops.cpp)
                                     "heaviside"};
    return std::find(std::begin(no), std::end(no), op) == std::end(no);
  };
  for (DT t : {DT::F32, DT::F64}) {
    for (const auto& row : ember::test::kUnaryRows) {
      const std::string op = ember::ops::name(row.op);
      if (!wanted(filter, op) || !differentiable(op)) continue;
      reseed("grad unary " + op + dt_name(t));
      std::vector<Val> v = specials(t), r = randoms(t, row.dom, row.dom, 32);
      v.insert(v.end(), r.begin(), r.end());
      Call c;
      c.kind = Kind::Unary;
      c.op = op;
      c.grad = true;
      c.a = make_buf(t, v, {static_cast<int64_t>(v.size())});
      if (takes_params(op)) {
        c.has_params = true;
        c.p[0] = row.params.a, c.p[1] = row.params.b, c.p[2] = row.params.c;
      }
      compare_both_orders(rep, c);
      inplace_variants(rep, c, t);
    }
    for (const auto& row : ember::test::kBinaryRows) {
      const std::string op = ember::ops::name(row.op);
      if (!wanted(filter, op) || !differentiable(op)) continue;
      reseed("grad binary " + op + dt_name(t));
      std::vector<Val> sa = specials(t), xa, xb;
      for (const Val& a : sa)
        for (const Val& b : sa) xa.push_back(a), xb.push_back(b);
      std::vector<Val> ra = randoms(t, row.a, row.ia, 32), rb = randoms(t, row.b, row.ib, 32);
      xa.insert(xa.end(), ra.begin(), ra.end());
      xb.insert(xb.end(), rb.begin(), rb.end());
      Call c;
      c.kind = Kind::Binary;
      c.op = op;
      c.grad = true;
      c.a = make_buf(t, xa, {static_cast<int64_t>(xa.size())});
      c.b = make_buf(t, xb, {static_cast<int64_t>(xb.size())});
      compare_both_orders(rep, c);
      inplace_variants(rep, c, t);
      for (double sv : {2.0, 0.5, -1.0, 0.0}) {
        Call d = c;
        d.kind = Kind::TensorScalar;
        d.s = {ScalarArg::Float, sv, 0};
        compare_both_orders(rep, d);
        if (sv == 0.5) inplace_variants(rep, d, t);
      }
    }
  }
  // Gradients across promotion and broadcasting: each comes back in its operand's dtype and
  // shape (summed over the broadcast dims), at first and second order.
  for (const auto& row : ember::test::kBinaryRows) {
    const std::string op = ember::ops::name(row.op);
    if (!wanted(filter, op) || !differentiable(op)) continue;
    reseed("grad binary mixed " + op);
    Call c;
    c.kind = Kind::Binary;
    c.op = op;
    c.grad = true;
    c.a = make_buf(DT::F32, randoms(DT::F32, row.a, row.ia, 24), {24});  // f32 with f64: f64 results
    c.b = make_buf(DT::F64, randoms(DT::F64, row.b, row.ib, 24), {24});
    compare(rep, c, true);
    for (DT t : {DT::F32, DT::F64}) {
      c.a = make_buf(t, randoms(t, row.a, row.ia, 8), {8, 1});  // (8, 1) with (1, 6)
      c.b = make_buf(t, randoms(t, row.b, row.ib, 6), {1, 6});
      compare_both_orders(rep, c);
      c.b = make_buf(t, randoms(t, row.b, row.ib, 1), {});  // a 0-d tensor
      compare(rep, c, true);
    }
  }
}

/// nn::functional's windowed ops on random configurations: kernel, stride, padding,
/// dilation, groups, ceil_mode, output sizes and scale factors drawn per call (invalid ones
/// included: both libraries must refuse them).
void nn_calls(Report& rep, const std::string& filter) {
  reseed("nn");
  std::mt19937_64 g(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  auto d = [](int v) { return static_cast<double>(v); };
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 120; ++n) {
      const int groups = pick(1, 3), ci = pick(1, 2) * groups, co = pick(1, 2) * groups;
      const int h = pick(1, 9), w = pick(1, 9), kh = pick(1, 4), kw = pick(1, 4);
      const Buf x = random_buf(t, {2, ci, h, w}, {-2, 2}, false);
      const Buf wt = random_buf(t, {co, ci / groups, kh, kw}, {-1, 1}, false);
      const Buf b = random_buf(t, {co}, {-1, 1}, false);
      const std::vector<double> conv = {d(pick(1, 3)), d(pick(1, 3)), d(pick(0, 2)), d(pick(0, 2)),
                                        d(pick(1, 2)), d(pick(1, 2)), d(groups)};
      if (n % 3 == 0) named(rep, filter, "conv2d", {x, wt}, conv);
      else named(rep, filter, "conv2d", {x, wt, b}, conv);
      // conv_transpose2d: weight (C_in, C_out / groups, kh, kw); output_padding < stride or dilation.
      const Buf wtt = random_buf(t, {ci, co / groups, kh, kw}, {-1, 1}, false);
      const int sh = pick(1, 3), sw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2);
      named(rep, filter, "conv_transpose2d", {x, wtt, b},
            {d(sh), d(sw), d(pick(0, 2)), d(pick(0, 2)), d(pick(0, std::max(sh, dh) - 1)), d(pick(0, std::max(sw, dw) - 1)),
             d(groups), d(dh), d(dw)});
      const int pk_h = pick(1, 4), pk_w = pick(1, 4);
      named(rep, filter, "max_pool2d", {x},
            {d(pk_h), d(pk_w), d(pick(1, 3)), d(pick(1, 3)), d(pick(0, pk_h / 2)), d(pick(0, pk_w / 2)), d(pick(1, 2)),
             d(pick(1, 2)), d(pick(0, 1))});
      named(rep, filter, "avg_pool2d", {x},
            {d(pk_h), d(pk_w), d(pick(1, 3)), d(pick(1, 3)), d(pick(0, pk_h / 2)), d(pick(0, pk_w / 2)), d(pick(0, 1)),
             d(pick(0, 1)), d(n % 5 == 0 ? pick(1, 7) : 0)});
      named(rep, filter, "adaptive_avg_pool2d", {x}, {d(pick(1, 7)), d(pick(1, 7))});
      named(rep, filter, "adaptive_max_pool2d", {x}, {d(pick(1, 7)), d(pick(1, 7))});
      const int mode = pick(0, 4);
      const bool corners = (mode == 1 || mode == 2) && pick(0, 1);
      if (n % 2 == 0) {
        named(rep, filter, "interpolate", {x}, {d(pick(1, 13)), d(pick(1, 13)), d(mode), d(corners), 0, 0});
      } else if (mode != 4) {  // a scale factor: the size is floor(in * factor), the taps follow the factor
        const double fh = pick(3, 30) / 10.0, fw = pick(3, 30) / 10.0;
        const int oh = static_cast<int>(std::floor(h * fh)), ow = static_cast<int>(std::floor(w * fw));
        if (oh > 0 && ow > 0) named(rep, filter, "interpolate", {x}, {d(oh), d(ow), d(mode), d(corners), fh, fw});
      }
      named(rep, filter, "pad", {x}, {d(pick(0, 3)), d(pick(0, 3)), d(pick(0, 3)), d(pick(0, 3)), d(pick(0, 3))});
    }
  }
}

}  // namespace ediff

int main(int argc, char** argv) {
  std::string filter;
  ediff::Report rep;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--verbose") rep.verbose = true;
    else {
      std::printf("usage: %s [--filter OP] [--verbose]\n", argv[0]);
      return a == "--help" ? 0 : 2;
    }
  }
  std::printf("ember-vs-libtorch: libtorch %s\n", ediff::torch_version());
  ediff::unary_calls(rep, filter);
  ediff::binary_calls(rep, filter);
  ediff::reduce_calls(rep, filter);
  ediff::named_calls(rep, filter);
  ediff::nn_calls(rep, filter);
  ediff::grad_calls(rep, filter);
  ediff::loss_calls(rep, filter);
  ediff::misc_calls(rep, filter);
  ediff::index_calls(rep, filter);
  ediff::shape_calls(rep, filter);
  ediff::loss_more_calls(rep, filter);
  ediff::layer_calls(rep, filter);
  ediff::rnn_calls(rep, filter);
  ediff::python_composite_calls(rep, filter);
  ediff::optimizer_calls(rep, filter);
  ediff::late_op_calls(rep, filter);
  ediff::linalg_calls(rep, filter);
  ediff::more_nn_calls(rep, filter);
  ediff::attention_calls(rep, filter);
  ediff::index_expr_calls(rep, filter);
  ediff::transformer_calls(rep, filter);
  ediff::decomposition_calls(rep, filter);
  ediff::arrange_calls(rep, filter);
  ediff::statistics_calls(rep, filter);
  std::printf("\n%d calls, %d differ from libtorch, %d known differences (--verbose lists them)\n", rep.calls,
              rep.mismatched_calls, rep.known);
  for (const auto& [cat, n] : rep.by_category) std::printf("  %s: %d\n", cat.c_str(), n);
  return rep.mismatched_calls == 0 ? 0 : 1;
}
