#include "sim/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>

namespace hg::sim::svg {

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Colour(size_t index) {
  // Okabe-Ito without its yellow (too faint on white) and with black last.
  static constexpr std::array<const char*, kColours> kPalette = {
      "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
  return kPalette[index % kPalette.size()];
}

namespace {

constexpr double kDay = 86400;
constexpr double kCharWidth = 6.6;  // rough width of one 12px sans-serif character

// Fixed-precision number with trailing zeros (and a bare point) removed: "2.50" -> "2.5".
std::string Trim(double v, int decimals) {
  std::string s = fmt::format("{:.{}f}", v, std::max(decimals, 0));
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

// Decimals needed to tell values `step` apart.
int DecimalsFor(double step) {
  if (!(step > 0) || step >= 1) return 0;
  return static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
}

// SVG coordinates: one decimal is well below a pixel and keeps the files small and stable.
std::string C(double v) { return Trim(v, 1); }

struct Scale {
  double lo = 0, hi = 1;  // data range
  double a = 0, b = 1;    // pixel range (b may be < a for y)
  bool log = false;
  double operator()(double v) const {
    double t = 0;
    if (log) {
      const double lv = std::log10(std::max(v, lo));
      t = (lv - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    } else {
      t = (v - lo) / (hi - lo);
    }
    return a + t * (b - a);
  }
};

struct Ticks {
  std::vector<double> values;
  double step = 0;  // linear step (0 for log)
  double lo = 0, hi = 1;
};

// Ticks and the axis range. `extend` widens the range to the outer ticks (value axes); otherwise
// the range is the data's and only ticks inside it are kept (time axes).
Ticks MakeTicks(const Axis& axis, double dmin, double dmax, bool extend, int target) {
  Ticks t;
  double lo = axis.fixed ? axis.min : dmin;
  double hi = axis.fixed ? axis.max : dmax;
  if (axis.log) {
    lo = std::max(lo, axis.format == TickFormat::kSeconds ? 1.0 : 1e-3);
    if (!(hi > lo)) hi = lo * 10;
    t.values = LogTicks(lo, hi, axis.format);
    if (extend || !axis.fixed) {
      t.lo = t.values.front();
      t.hi = t.values.back();
    } else {
      t.lo = lo;
      t.hi = hi;
    }
    return t;
  }
  if (!axis.fixed && extend) lo = std::min(lo, 0.0);
  if (!(hi > lo)) hi = lo + (axis.format == TickFormat::kDays ? kDay : 1);
  const double unit = axis.format == TickFormat::kDays ? kDay : 1;
  std::vector<double> v = LinearTicks(lo / unit, hi / unit, target);
  for (double& x : v) x *= unit;
  t.step = v.size() > 1 ? v[1] - v[0] : unit;
  if (extend && !axis.fixed) {
    t.lo = v.front();
    t.hi = v.back();
    t.values = v;
  } else {
    t.lo = lo;
    t.hi = hi;
    const double eps = (hi - lo) * 1e-9;
    for (double x : v)
      if (x >= lo - eps && x <= hi + eps) t.values.push_back(x);
  }
  return t;
}

// Title, note and legend at the top; returns the y where the plot area may start.
struct Header {
  std::string svg;
  double bottom = 0;
};

struct LegendItem {
  std::string name;
  std::string colour;
  std::string kind;  // "line", "outline", "filled"
  bool series = true;
};

Header RenderHeader(const std::string& title, const std::string& note,
                    const std::vector<LegendItem>& items, int width) {
  Header h;
  h.svg += fmt::format(
      "<text class=\"chart-title\" x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}"
      "</text>\n",
      Escape(title));
  double y = 22;
  if (!note.empty()) {
    y += 18;
    h.svg += fmt::format("<text x=\"12\" y=\"{}\" font-size=\"12\" fill=\"#555\">{}</text>\n", C(y),
                         Escape(note));
  }
  // Legend: entries left to right, wrapping at the chart's width.
  y += 22;
  double x = 12;
  for (const LegendItem& it : items) {
    const double w = 26 + kCharWidth * static_cast<double>(it.name.size()) + 18;
    if (x + w > width - 12 && x > 12) {
      x = 12;
      y += 20;
    }
    const char* cls = it.series ? "legend-entry" : "legend-key";
    std::string swatch;
    if (it.kind == "line") {
      swatch = fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>", C(x),
          C(y - 4), C(x + 20), C(y - 4), it.colour);
    } else if (it.kind == "outline") {
      swatch = fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"1.5\"/>",
          C(x + 3), C(y - 11), it.colour);
    } else {
      swatch = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/>",
                           C(x + 3), C(y - 11), it.colour);
    }
    h.svg += fmt::format(
        "<g class=\"{}\" data-series=\"{}\">{}<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>"
        "</g>\n",
        cls, Escape(it.name), swatch, C(x + 26), C(y), Escape(it.name));
    x += w;
  }
  h.bottom = y + 16;
  return h;
}

std::string OpenSvg(const std::string& id, const std::string& title, int width, double height) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"{}\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" font-family=\"sans-serif\">\n"
      "<title>{}</title>\n",
      Escape(id), width, C(height), width, C(height), Escape(title));
}

// Axis lines, grid, tick labels and axis titles of a plot area.
std::string RenderYAxis(const Axis& axis, const Ticks& t, const Scale& sy, double left,
                        double right) {
  std::string s;
  for (double v : t.values) {
    const double y = sy(v);
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        C(left), C(y), C(right), C(y), C(left - 6), C(y + 4),
        Escape(FormatTick(v, axis.format, t.step)));
  }
  const double mid = (sy.a + sy.b) / 2;
  s += fmt::format(
      "<text x=\"14\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">{}</text>\n",
      C(mid), C(mid), Escape(axis.label));
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", C(left),
                   C(sy.a), C(left), C(sy.b));
  return s;
}

}  // namespace

std::vector<double> LinearTicks(double lo, double hi, int target) {
  assert(std::isfinite(lo) && std::isfinite(hi));
  if (!(hi > lo)) hi = lo + 1;
  target = std::max(target, 2);
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // Integer multiples of the step (no accumulated drift); labels round them (FormatTick).
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  std::vector<double> out;
  for (double k = first; k <= last; k += 1) out.push_back(k * step);
  if (out.size() < 2) out.push_back((last + 1) * step);
  return out;
}

std::vector<double> LogTicks(double lo, double hi, TickFormat format) {
  assert(lo > 0 && hi >= lo);
  std::vector<double> all;
  if (format == TickFormat::kSeconds) {
    all = {1, 10, 60, 600, 3600, 36000, kDay, 10 * kDay, 100 * kDay, 1000 * kDay};
  } else {
    for (int e = -6; e <= 12; ++e) all.push_back(std::pow(10.0, e));
  }
  size_t a = 0, b = all.size() - 1;
  while (a + 1 < all.size() && all[a + 1] <= lo) ++a;
  while (b > 0 && all[b - 1] >= hi) --b;
  if (b <= a) b = std::min(a + 1, all.size() - 1);
  return std::vector<double>(all.begin() + static_cast<ptrdiff_t>(a),
                             all.begin() + static_cast<ptrdiff_t>(b) + 1);
}

std::string FormatTick(double v, TickFormat format, double step) {
  switch (format) {
    case TickFormat::kNumber:
      return Trim(v, DecimalsFor(step));
    case TickFormat::kPercent:
      return Trim(v * 100, DecimalsFor(step * 100)) + "%";
    case TickFormat::kDays:
      return Trim(v / kDay, DecimalsFor(step / kDay));
    case TickFormat::kSeconds:
      if (std::fabs(v) < 60) return Trim(v, 1) + "s";
      if (std::fabs(v) < 3600) return Trim(v / 60, 1) + "m";
      if (std::fabs(v) < kDay) return Trim(v / 3600, 1) + "h";
      return Trim(v / kDay, 1) + "d";
  }
  return Trim(v, 2);
}

std::string Render(const LineChart& chart) {
  std::vector<LegendItem> items;
  for (const LineSeries& s : chart.series) items.push_back({s.name, s.colour, "line", true});
  const Header head = RenderHeader(chart.title, chart.note, items, chart.width);

  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  bool any = false;
  for (const LineSeries& s : chart.series) {
    for (const Point& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
      if (!any) {
        xmin = xmax = p.x;
        ymin = ymax = p.y;
        any = true;
      }
      xmin = std::min(xmin, p.x);
      xmax = std::max(xmax, p.x);
      ymin = std::min(ymin, p.y);
      ymax = std::max(ymax, p.y);
    }
  }
  const Ticks xt = MakeTicks(chart.x, xmin, xmax, /*extend=*/chart.x.log, 8);
  const Ticks yt = MakeTicks(chart.y, ymin, ymax, /*extend=*/true, 5);

  const double left = 74, right = chart.width - 20.0;
  const double top = head.bottom, bottom = top + std::max(chart.height - 60.0 - top, 120.0);
  const double height = bottom + 52;
  const Scale sx{xt.lo, xt.hi, left, right, chart.x.log};
  const Scale sy{yt.lo, yt.hi, bottom, top, chart.y.log};

  std::string s = OpenSvg(chart.id, chart.title, chart.width, height);
  s += head.svg;
  s += RenderYAxis(chart.y, yt, sy, left, right);
  for (double v : xt.values) {
    const double x = sx(v);
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>"
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
        C(x), C(bottom), C(x), C(bottom + 5), C(x), C(bottom + 18),
        Escape(FormatTick(v, chart.x.format, xt.step)));
  }
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", C(left),
                   C(bottom), C(right), C(bottom));
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                   C((left + right) / 2), C(bottom + 40), Escape(chart.x.label));

  const std::string clip = chart.id + "-clip";
  s += fmt::format(
      "<clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
      Escape(clip), C(left), C(top - 2), C(right - left), C(bottom - top + 4));
  s += fmt::format("<g clip-path=\"url(#{})\">\n", Escape(clip));
  for (const LineSeries& ser : chart.series) {
    std::string d;
    bool first = true;
    for (const Point& p : ser.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
      const double x = sx(p.x), y = sy(p.y);
      if (first) {
        d += fmt::format("M{} {}", C(x), C(y));
      } else if (ser.step) {
        d += fmt::format("H{}V{}", C(x), C(y));
      } else {
        d += fmt::format("L{} {}", C(x), C(y));
      }
      first = false;
    }
    if (d.empty()) continue;
    s += fmt::format(
        "<path class=\"mark\" data-series=\"{}\" d=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.6\" stroke-linejoin=\"round\"/>\n",
        Escape(ser.name), d, ser.colour);
    if (ser.points.size() == 1) {  // a single sample: a dot, so it is visible at all
      s += fmt::format(
          "<circle class=\"mark\" data-series=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n",
          Escape(ser.name), C(sx(ser.points[0].x)), C(sy(ser.points[0].y)), ser.colour);
    }
  }
  s += "</g>\n</svg>\n";
  return s;
}

std::string Render(const BarChart& chart) {
  std::vector<LegendItem> items;
  for (const BarSeries& s : chart.series) items.push_back({s.name, s.colour, "filled", true});
  items.push_back({chart.outline_label, "#555", "outline", false});
  items.push_back({chart.filled_label, "#555", "filled", false});
  const Header head = RenderHeader(chart.title, chart.note, items, chart.width);

  double ymax = 0;
  for (const BarSeries& s : chart.series) {
    for (double v : s.outline)
      if (std::isfinite(v)) ymax = std::max(ymax, v);
    for (double v : s.filled)
      if (std::isfinite(v)) ymax = std::max(ymax, v);
  }
  const Ticks yt = MakeTicks(chart.y, 0, ymax, /*extend=*/true, 5);
  // Category labels are slanted, so long budget paths fit under narrow groups.
  size_t longest = 0;
  for (const std::string& c : chart.categories) longest = std::max(longest, c.size());
  longest = std::min<size_t>(longest, 28);
  const double label_room = 14 + 0.72 * kCharWidth * static_cast<double>(longest);

  const double left = 74, right = chart.width - 20.0;
  const double top = head.bottom, bottom = top + std::max(chart.height - 40.0 - top, 120.0);
  const double height = bottom + label_room + 30;
  const Scale sy{yt.lo, yt.hi, bottom, top, chart.y.log};

  std::string s = OpenSvg(chart.id, chart.title, chart.width, height);
  s += head.svg;
  s += RenderYAxis(chart.y, yt, sy, left, right);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", C(left),
                   C(bottom), C(right), C(bottom));

  const size_t nc = std::max<size_t>(chart.categories.size(), 1);
  const size_t ns = std::max<size_t>(chart.series.size(), 1);
  const double group = (right - left) / static_cast<double>(nc);
  const double slot = group * 0.8 / static_cast<double>(ns);
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double gx = left + group * static_cast<double>(c) + group * 0.1;
    for (size_t i = 0; i < chart.series.size(); ++i) {
      const BarSeries& ser = chart.series[i];
      const double x = gx + slot * static_cast<double>(i);
      auto bar = [&](double v, bool filled) {
        if (!std::isfinite(v)) return;
        const double y = sy(std::max(v, yt.lo));
        const double inset = filled ? slot * 0.22 : slot * 0.06;
        if (filled) {
          s += fmt::format(
              "<rect class=\"mark\" data-series=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" "
              "height=\"{}\" fill=\"{}\"/>\n",
              Escape(ser.name), C(x + inset), C(y), C(slot - 2 * inset), C(bottom - y), ser.colour);
        } else {
          s += fmt::format(
              "<rect class=\"mark\" data-series=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" "
              "height=\"{}\" fill=\"{}\" fill-opacity=\"0.12\" stroke=\"{}\" "
              "stroke-width=\"1.2\"/>\n",
              Escape(ser.name), C(x + inset), C(y), C(slot - 2 * inset), C(bottom - y), ser.colour,
              ser.colour);
        }
      };
      if (c < ser.outline.size()) bar(ser.outline[c], false);
      if (c < ser.filled.size()) bar(ser.filled[c], true);
    }
    std::string label = chart.categories[c];
    if (label.size() > 28) label = "..." + label.substr(label.size() - 25);
    const double cx = left + group * (static_cast<double>(c) + 0.5);
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" "
        "transform=\"rotate(-35 {} {})\">{}</text>\n",
        C(cx), C(bottom + 14), C(cx), C(bottom + 14), Escape(label));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace hg::sim::svg
