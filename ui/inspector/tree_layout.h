#pragma once
// Pure layout of one step's draft tree for the inspector: no Qt, no ImGui, deterministic. The step's root token
// sits at depth 0; every draft node sits in the column of its depth; the bonus token (sampled by the target at
// the end of the accepted path) is an extra leaf hanging off that path's last node. Vertically it is a tidy
// tree (Reingold-Tilford style contours): each parent is centred on its children, a subtree never overlaps its
// siblings' subtrees at any depth, and siblings run from the highest draft probability down.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/methods/step_record.h"

namespace specscope::ui {

enum class LayoutKind : uint8_t { Root, Draft, Bonus };

struct LayoutItem {
  LayoutKind kind = LayoutKind::Draft;
  int node = -1;    // index into StepRecord::nodes (Draft only)
  int parent = -1;  // index into TreeLayout::items; -1 for the root
  int depth = 0;    // column: 0 for the root, its children 1, ...
  float x = 0, y = 0;  // the box's centre, in layout units
  bool on_accepted_path = false;  // the root, accepted nodes of accepted_path, and the bonus
};

struct LayoutParams {
  float column_spacing = 1.0f;  // x distance between depths
  float row_spacing = 1.0f;     // minimum y distance between two boxes of one column
  float box_width = 0.8f;       // < column_spacing
  float box_height = 0.8f;      // < row_spacing
};

struct TreeLayout {
  std::vector<LayoutItem> items;  // items[0] is the root; then depth-first pre-order (siblings sorted)
  std::vector<int> item_of_node;  // StepRecord node id -> item index
  int bonus_item = -1;            // -1 when the step has no bonus token
  int max_depth = 0;
  float box_width = 0, box_height = 0;
  float min_x = 0, min_y = 0, max_x = 0, max_y = 0;  // bounding box of every box (edges included)
  float width() const { return max_x - min_x; }
  float height() const { return max_y - min_y; }
};

// Malformed trees still lay out: a parent id out of range or a cycle hangs the node off the root.
TreeLayout layout_step_tree(const StepRecord& step, const LayoutParams& params = {});

// Whether the step's bonus token joined the text. The target always samples one, but it is not committed when
// it is an end-of-sequence token (or the token limit came first): such a bonus is not drawn or counted.
bool bonus_committed(const StepRecord& step);

// A token's text made visible in one line: "\n" -> "⏎", "\t" -> "⇥", "\r" -> "↵", " " -> "·", other control
// bytes and invalid UTF-8 -> "\xNN", empty -> "∅"; cut to max_codepoints with "…". With unicode_symbols false
// the symbols are ASCII ("\n", "\t", "\r", "_", "<empty>", "..."), for fonts that lack them.
std::string display_token(std::string_view text, size_t max_codepoints = 14, bool unicode_symbols = true);

}  // namespace specscope::ui
