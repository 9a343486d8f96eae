#include "ui/inspector/tree_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace specscope::ui {

namespace {

// Sibling order: highest draft probability first, nodes without one last, then by id (deterministic).
bool sibling_before(const StepRecord& s, int a, int b) {
  const float pa = s.nodes[size_t(a)].draft_prob, pb = s.nodes[size_t(b)].draft_prob;
  const bool na = std::isnan(pa), nb = std::isnan(pb);
  if (na != nb) return nb;
  if (!na && pa != pb) return pa > pb;
  return a < b;
}

// Effective parents: -1 (the root) for out-of-range parents and to break cycles, so that every node is
// reachable from the root exactly once.
std::vector<int> effective_parents(const StepRecord& s) {
  const int n = int(s.nodes.size());
  std::vector<int> parent(size_t(n), -1);
  for (int i = 0; i < n; ++i) {
    const int p = s.nodes[size_t(i)].parent;
    parent[size_t(i)] = (p >= 0 && p < n && p != i) ? p : -1;
  }
  std::vector<char> reached(size_t(n), 0);
  std::vector<std::vector<int>> children(static_cast<size_t>(n));
  for (;;) {
    for (auto& c : children) c.clear();
    std::vector<int> stack;
    for (int i = 0; i < n; ++i) {
      if (parent[size_t(i)] < 0) stack.push_back(i);
      else children[size_t(parent[size_t(i)])].push_back(i);
    }
    std::fill(reached.begin(), reached.end(), 0);
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (reached[size_t(v)]) continue;
      reached[size_t(v)] = 1;
      for (int c : children[size_t(v)]) stack.push_back(c);
    }
    const auto it = std::find(reached.begin(), reached.end(), 0);
    if (it == reached.end()) break;
    parent[size_t(it - reached.begin())] = -1;  // the first node of an unreachable cycle hangs off the root
  }
  return parent;
}

struct Span {
  float lo, hi;
};

}  // namespace

bool bonus_committed(const StepRecord& step) {
  return step.bonus_token >= 0 && step.committed.size() > step.accepted_path.size() &&
         step.committed.back() == step.bonus_token;
}

TreeLayout layout_step_tree(const StepRecord& step, const LayoutParams& params) {
  TreeLayout out;
  out.box_width = params.box_width;
  out.box_height = params.box_height;
  const int n = int(step.nodes.size());
  const std::vector<int> parent = effective_parents(step);

  // Children per node (index n stands for the root), sorted; the bonus is the last child of the accepted
  // path's end. Child value -2 marks the bonus.
  constexpr int kBonus = -2;
  std::vector<std::vector<int>> children(static_cast<size_t>(n) + 1);
  for (int i = 0; i < n; ++i) children[size_t(parent[size_t(i)] < 0 ? n : parent[size_t(i)])].push_back(i);
  for (auto& c : children) std::sort(c.begin(), c.end(), [&](int a, int b) { return sibling_before(step, a, b); });

  std::vector<char> accepted(size_t(n), 0);
  int path_end = n;  // the root
  for (int id : step.accepted_path) {
    if (id < 0 || id >= n) break;
    accepted[size_t(id)] = 1;
    path_end = id;
  }
  if (bonus_committed(step)) children[size_t(path_end)].push_back(kBonus);

  // Items in depth-first pre-order: an item is created when the walk reaches it, siblings in sorted order.
  out.item_of_node.assign(size_t(n), -1);
  out.items.push_back(LayoutItem{LayoutKind::Root, -1, -1, 0, 0, 0, true});
  std::vector<std::vector<int>> item_children(1);
  {
    std::vector<std::pair<int, int>> stack;  // (node id, or n for the root, or kBonus; parent item)
    const auto push_children = [&](int v, int item) {
      const auto& kids = children[size_t(v)];
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back({*it, item});
    };
    push_children(n, 0);
    while (!stack.empty()) {
      const auto [c, parent_item] = stack.back();
      stack.pop_back();
      LayoutItem li;
      li.parent = parent_item;
      li.depth = out.items[size_t(parent_item)].depth + 1;
      const int item = int(out.items.size());
      if (c == kBonus) {
        li.kind = LayoutKind::Bonus;
        li.on_accepted_path = true;
        out.bonus_item = item;
      } else {
        li.node = c;
        li.on_accepted_path = accepted[size_t(c)] != 0;
        out.item_of_node[size_t(c)] = item;
      }
      out.items.push_back(li);
      item_children.emplace_back();
      item_children[size_t(parent_item)].push_back(item);
      if (c != kBonus) push_children(c, item);
    }
  }
  const int items = int(out.items.size());

  // Contours bottom-up (children have larger item indices than their parents): offset[c] is child c's y
  // relative to its parent; contour[v][l] the y-span of v's subtree l levels below v, relative to v.
  std::vector<float> offset(size_t(items), 0.0f);
  std::vector<std::vector<Span>> contour(static_cast<size_t>(items));
  const float gap = params.row_spacing;
  for (int v = items - 1; v >= 0; --v) {
    const auto& kids = item_children[size_t(v)];
    std::vector<Span> merged;  // levels below v, relative to the first child's y
    std::vector<float> pos;
    for (int c : kids) {
      std::vector<Span>& cc = contour[size_t(c)];
      float p = 0.0f;
      if (!pos.empty()) {
        p = pos.back() + gap;
        const size_t common = std::min(merged.size(), cc.size());
        for (size_t l = 0; l < common; ++l) p = std::max(p, merged[l].hi - cc[l].lo + gap);
      }
      pos.push_back(p);
      for (size_t l = 0; l < cc.size(); ++l) {
        if (l < merged.size()) {
          merged[l].lo = std::min(merged[l].lo, cc[l].lo + p);
          merged[l].hi = std::max(merged[l].hi, cc[l].hi + p);
        } else {
          merged.push_back({cc[l].lo + p, cc[l].hi + p});
        }
      }
      std::vector<Span>().swap(cc);  // no longer needed
    }
    const float mid = pos.empty() ? 0.0f : 0.5f * (pos.front() + pos.back());
    for (size_t k = 0; k < kids.size(); ++k) offset[size_t(kids[k])] = pos[k] - mid;
    std::vector<Span>& mine = contour[size_t(v)];
    mine.reserve(merged.size() + 1);
    mine.push_back({0.0f, 0.0f});
    for (const Span& s : merged) mine.push_back({s.lo - mid, s.hi - mid});
  }

  // Absolute positions top-down; the bounding box.
  const float hw = 0.5f * params.box_width, hh = 0.5f * params.box_height;
  out.min_x = out.min_y = 0.0f;
  out.max_x = out.max_y = 0.0f;
  for (int v = 0; v < items; ++v) {
    LayoutItem& li = out.items[size_t(v)];
    li.x = float(li.depth) * params.column_spacing;
    li.y = li.parent < 0 ? 0.0f : out.items[size_t(li.parent)].y + offset[size_t(v)];
    out.max_depth = std::max(out.max_depth, li.depth);
    if (v == 0) {
      out.min_x = li.x - hw, out.max_x = li.x + hw, out.min_y = li.y - hh, out.max_y = li.y + hh;
    } else {
      out.min_x = std::min(out.min_x, li.x - hw), out.max_x = std::max(out.max_x, li.x + hw);
      out.min_y = std::min(out.min_y, li.y - hh), out.max_y = std::max(out.max_y, li.y + hh);
    }
  }
  return out;
}

std::string display_token(std::string_view text, size_t max_codepoints, bool unicode_symbols) {
  if (text.empty()) return unicode_symbols ? "\xE2\x88\x85" : "<empty>";  // ∅
  std::string out;
  size_t shown = 0;
  size_t i = 0;
  auto hex = [&](unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    out += buf;
  };
  while (i < text.size()) {
    if (shown >= max_codepoints) {
      out += unicode_symbols ? "\xE2\x80\xA6" : "...";  // …
      break;
    }
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b == '\n') out += unicode_symbols ? "\xE2\x8F\x8E" : "\\n", ++i;       // ⏎
    else if (b == '\t') out += unicode_symbols ? "\xE2\x87\xA5" : "\\t", ++i;  // ⇥
    else if (b == '\r') out += unicode_symbols ? "\xE2\x86\xB5" : "\\r", ++i;  // ↵
    else if (b == ' ') out += unicode_symbols ? "\xC2\xB7" : "_", ++i;         // ·
    else if (b < 0x20 || b == 0x7F) hex(b), ++i;
    else if (b < 0x80) out += char(b), ++i;
    else {
      // A UTF-8 sequence: copy it whole when well-formed, else escape the byte.
      int len = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
      bool ok = len > 0 && i + size_t(len) <= text.size();
      for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + size_t(k)]) & 0xC0) == 0x80;
      if (ok && len == 2 && b < 0xC2) ok = false;  // overlong
      if (ok) out.append(text.substr(i, size_t(len))), i += size_t(len);
      else hex(b), ++i;
    }
    ++shown;
  }
  return out;
}

}  // namespace specscope::ui
