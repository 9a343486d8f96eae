// The inspector's pure parts (no Qt, no ImGui): the draft-tree layout, the token display escaping and the
// cividis colour scale. Needs specscope_ui linked (ui/inspector/tree_layout.cpp, colormap.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/methods/step_record.h"
#include "ui/inspector/colormap.h"
#include "ui/inspector/tree_layout.h"

namespace specscope::ui {
namespace {

DraftNode node(int id, int parent, int depth, float p, NodeDecision d, const std::string& text) {
  DraftNode n;
  n.id = id;
  n.parent = parent;
  n.depth = depth;
  n.token = 100 + id;
  n.text = text;
  n.draft_prob = p;
  n.decision = d;
  return n;
}

// root ─┬─ 0 "The" (0.7, accepted) ─┬─ 2 " cat" (0.5, accepted) ── 5 " sat" (0.9, rejected)
//       │                          ├─ 3 " dog" (0.3, rejected)
//       │                          └─ 4 " end" (NaN, not reached)
//       └─ 1 "A" (0.2, not reached) ── 6 " big" (0.6, not reached)
// accepted path 0, 2; bonus " lay" after node 2.
StepRecord sample() {
  StepRecord s;
  s.step = 3;
  s.method = "eagle2";
  s.root_token = 7;
  // Ids deliberately not in sibling order: node 1 (p 0.2) comes before node 0's children.
  s.nodes.push_back(node(0, -1, 1, 0.7f, NodeDecision::Accepted, "The"));
  s.nodes.push_back(node(1, -1, 1, 0.2f, NodeDecision::NotReached, "A"));
  s.nodes.push_back(node(2, 0, 2, 0.5f, NodeDecision::Accepted, " cat"));
  s.nodes.push_back(node(3, 0, 2, 0.3f, NodeDecision::Rejected, " dog"));
  s.nodes.push_back(node(4, 0, 2, kNoValue, NodeDecision::NotReached, " end"));
  s.nodes.push_back(node(5, 2, 3, 0.9f, NodeDecision::Rejected, " sat"));
  s.nodes.push_back(node(6, 1, 2, 0.6f, NodeDecision::NotReached, " big"));
  s.accepted_path = {0, 2};
  s.bonus_token = 555;
  s.bonus_text = " lay";
  s.bonus_prob = 0.8f;
  s.committed = {100, 102, 555};  // the accepted drafts' tokens, then the bonus
  return s;
}

// All items of the subtree rooted at `item`.
std::vector<int> subtree(const TreeLayout& L, int item) {
  std::vector<int> out{item};
  for (size_t k = 0; k < out.size(); ++k)
    for (int i = 0; i < int(L.items.size()); ++i)
      if (L.items[size_t(i)].parent == out[k]) out.push_back(i);
  return out;
}

TEST(TreeLayout, RootDraftsAndBonusAreAllPlaced) {
  const StepRecord s = sample();
  const TreeLayout L = layout_step_tree(s);
  ASSERT_EQ(L.items.size(), s.nodes.size() + 2);  // + root + bonus
  EXPECT_EQ(L.items[0].kind, LayoutKind::Root);
  EXPECT_EQ(L.items[0].parent, -1);
  EXPECT_EQ(L.items[0].depth, 0);
  for (size_t id = 0; id < s.nodes.size(); ++id) {
    const int item = L.item_of_node[id];
    ASSERT_GE(item, 0);
    EXPECT_EQ(L.items[size_t(item)].node, int(id));
    EXPECT_EQ(L.items[size_t(item)].depth, s.nodes[id].depth);
  }
  ASSERT_GE(L.bonus_item, 0);
  const LayoutItem& bonus = L.items[size_t(L.bonus_item)];
  EXPECT_EQ(bonus.kind, LayoutKind::Bonus);
  EXPECT_EQ(bonus.parent, L.item_of_node[2]);  // after the end of the accepted path
  EXPECT_EQ(bonus.depth, 3);
  EXPECT_EQ(L.max_depth, 3);
  EXPECT_TRUE(bonus.on_accepted_path);
  EXPECT_TRUE(L.items[size_t(L.item_of_node[0])].on_accepted_path);
  EXPECT_TRUE(L.items[size_t(L.item_of_node[2])].on_accepted_path);
  EXPECT_FALSE(L.items[size_t(L.item_of_node[3])].on_accepted_path);
}

TEST(TreeLayout, ABonusThatWasNotCommittedIsNotDrawn) {
  // The target sampled <|eot_id|> after the accepted path: generation ended, nothing after the drafts joined
  // the text, so there is no bonus box (before: one was drawn after the EOS).
  StepRecord s = sample();
  s.committed = {100, 102};
  EXPECT_FALSE(bonus_committed(s));
  const TreeLayout L = layout_step_tree(s);
  EXPECT_EQ(L.bonus_item, -1);
  EXPECT_EQ(L.items.size(), s.nodes.size() + 1);  // the root and the drafts only
  // An accepted draft that was itself the EOS: neither it nor the bonus joined the text.
  s.committed = {100};
  EXPECT_FALSE(bonus_committed(s));
  EXPECT_TRUE(bonus_committed(sample()));
}

TEST(TreeLayout, XIncreasesWithDepth) {
  const TreeLayout L = layout_step_tree(sample());
  for (const LayoutItem& a : L.items) {
    if (a.parent >= 0) {
      EXPECT_GT(a.x, L.items[size_t(a.parent)].x);
    }
    for (const LayoutItem& b : L.items) {
      if (a.depth < b.depth) {
        EXPECT_LT(a.x, b.x);
      } else if (a.depth == b.depth) {
        EXPECT_FLOAT_EQ(a.x, b.x);
      }
    }
  }
}

TEST(TreeLayout, ParentsAreCentredAmongTheirChildrenAndSubtreesDoNotInterleave) {
  const TreeLayout L = layout_step_tree(sample());
  for (int p = 0; p < int(L.items.size()); ++p) {
    std::vector<int> kids;
    for (int i = 0; i < int(L.items.size()); ++i)
      if (L.items[size_t(i)].parent == p) kids.push_back(i);
    if (kids.empty()) continue;
    float lo = 1e9f, hi = -1e9f;
    for (int k : kids) lo = std::min(lo, L.items[size_t(k)].y), hi = std::max(hi, L.items[size_t(k)].y);
    // The parent sits within its children's y range (tidy: centred between first and last).
    EXPECT_GE(L.items[size_t(p)].y, lo - 1e-5f);
    EXPECT_LE(L.items[size_t(p)].y, hi + 1e-5f);
    EXPECT_NEAR(L.items[size_t(p)].y, 0.5f * (lo + hi), 1e-5f);
    // Every child's subtree stays inside the parent's subtree span, and two siblings' subtrees never
    // interleave at any depth: all of the earlier sibling's nodes of a depth lie above the later one's.
    std::sort(kids.begin(), kids.end(), [&](int a, int b) { return L.items[size_t(a)].y < L.items[size_t(b)].y; });
    const std::vector<int> whole = subtree(L, p);
    float span_lo = 1e9f, span_hi = -1e9f;
    for (int i : whole) span_lo = std::min(span_lo, L.items[size_t(i)].y), span_hi = std::max(span_hi, L.items[size_t(i)].y);
    for (size_t a = 0; a < kids.size(); ++a) {
      for (int i : subtree(L, kids[a])) {
        EXPECT_GE(L.items[size_t(i)].y, span_lo);
        EXPECT_LE(L.items[size_t(i)].y, span_hi);
      }
      for (size_t b = a + 1; b < kids.size(); ++b)
        for (int i : subtree(L, kids[a]))
          for (int j : subtree(L, kids[b]))
            if (L.items[size_t(i)].depth == L.items[size_t(j)].depth) {
              EXPECT_LT(L.items[size_t(i)].y, L.items[size_t(j)].y);
            }
    }
  }
}

TEST(TreeLayout, SiblingsRunFromHighestDraftProbabilityDown) {
  const StepRecord s = sample();
  const TreeLayout L = layout_step_tree(s);
  auto y = [&](int id) { return L.items[size_t(L.item_of_node[size_t(id)])].y; };
  EXPECT_LT(y(0), y(1));  // 0.7 above 0.2
  EXPECT_LT(y(2), y(3));  // 0.5 above 0.3
  EXPECT_LT(y(3), y(4));  // no probability last
  EXPECT_GT(L.items[size_t(L.bonus_item)].y, y(5));  // the bonus after the drafted children
}

TEST(TreeLayout, NoTwoBoxesOverlap) {
  const TreeLayout L = layout_step_tree(sample());
  for (size_t i = 0; i < L.items.size(); ++i)
    for (size_t j = i + 1; j < L.items.size(); ++j) {
      const bool apart_x = std::fabs(L.items[i].x - L.items[j].x) >= L.box_width;
      const bool apart_y = std::fabs(L.items[i].y - L.items[j].y) >= L.box_height;
      EXPECT_TRUE(apart_x || apart_y) << "items " << i << " and " << j;
    }
}

TEST(TreeLayout, BoundingBoxHoldsEveryBox) {
  const TreeLayout L = layout_step_tree(sample());
  for (const LayoutItem& li : L.items) {
    EXPECT_GE(li.x - L.box_width / 2, L.min_x - 1e-5f);
    EXPECT_LE(li.x + L.box_width / 2, L.max_x + 1e-5f);
    EXPECT_GE(li.y - L.box_height / 2, L.min_y - 1e-5f);
    EXPECT_LE(li.y + L.box_height / 2, L.max_y + 1e-5f);
  }
  EXPECT_GT(L.width(), 0);
  EXPECT_GT(L.height(), 0);
}

TEST(TreeLayout, Deterministic) {
  const TreeLayout a = layout_step_tree(sample());
  const TreeLayout b = layout_step_tree(sample());
  ASSERT_EQ(a.items.size(), b.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    EXPECT_EQ(a.items[i].node, b.items[i].node);
    EXPECT_EQ(a.items[i].parent, b.items[i].parent);
    EXPECT_EQ(a.items[i].x, b.items[i].x);
    EXPECT_EQ(a.items[i].y, b.items[i].y);
  }
}

TEST(TreeLayout, WideUnbalancedTreeStaysCompactAndDisjoint) {
  // EAGLE-like: many shallow leaves plus one deep chain; 60 nodes over 5 depths.
  StepRecord s;
  int id = 0;
  std::vector<int> prev_level{-1};
  for (int depth = 1; depth <= 5; ++depth) {
    std::vector<int> level;
    for (size_t k = 0; k < prev_level.size() && id < 60; ++k) {
      const int fan = depth == 1 ? 6 : (k == 0 ? 5 : 2);
      for (int c = 0; c < fan && id < 60; ++c) {
        s.nodes.push_back(node(id, prev_level[k], depth, 0.9f / float(c + 1), NodeDecision::NotReached, "t"));
        level.push_back(id++);
      }
    }
    prev_level = level;
  }
  s.accepted_path = {0};
  s.bonus_token = 1;
  s.committed = {100, 1};
  const TreeLayout L = layout_step_tree(s);
  ASSERT_EQ(L.items.size(), s.nodes.size() + 2);
  for (size_t i = 0; i < L.items.size(); ++i)
    for (size_t j = i + 1; j < L.items.size(); ++j)
      if (L.items[i].depth == L.items[j].depth) {
        EXPECT_GE(std::fabs(L.items[i].y - L.items[j].y), 1.0f - 1e-4f);
      }
  // Contour packing: never taller than one row per leaf.
  int leaves = 0;
  for (size_t i = 0; i < L.items.size(); ++i)
    leaves += std::none_of(L.items.begin(), L.items.end(), [&](const LayoutItem& o) { return o.parent == int(i); });
  EXPECT_LE(L.height(), float(leaves) + 1e-3f);
}

TEST(TreeLayout, MalformedParentsAndCyclesStillLayOut) {
  StepRecord s;
  s.nodes.push_back(node(0, 5, 1, 0.5f, NodeDecision::NotReached, "a"));   // parent out of range
  s.nodes.push_back(node(1, 2, 2, 0.5f, NodeDecision::NotReached, "b"));   // 1 <-> 2 cycle
  s.nodes.push_back(node(2, 1, 2, 0.5f, NodeDecision::NotReached, "c"));
  s.nodes.push_back(node(3, 3, 1, 0.5f, NodeDecision::NotReached, "d"));   // its own parent
  const TreeLayout L = layout_step_tree(s);
  EXPECT_EQ(L.items.size(), 5u);  // root + 4, no bonus
  EXPECT_EQ(L.bonus_item, -1);
  for (int item : L.item_of_node) EXPECT_GE(item, 0);
}

TEST(TreeLayout, EmptyStepIsJustTheRoot) {
  StepRecord s;
  const TreeLayout L = layout_step_tree(s);
  ASSERT_EQ(L.items.size(), 1u);
  EXPECT_FLOAT_EQ(L.width(), L.box_width);
  EXPECT_FLOAT_EQ(L.height(), L.box_height);
}

TEST(DisplayToken, EscapesWhitespaceAndControlBytes) {
  EXPECT_EQ(display_token(" the"), "\xC2\xB7the");
  EXPECT_EQ(display_token("a\nb"), "a\xE2\x8F\x8E" "b");
  EXPECT_EQ(display_token("\t"), "\xE2\x87\xA5");
  EXPECT_EQ(display_token(""), "\xE2\x88\x85");
  EXPECT_EQ(display_token(std::string("\x01", 1)), "\\x01");
  EXPECT_EQ(display_token("\xFF"), "\\xFF");                 // invalid UTF-8
  EXPECT_EQ(display_token("caf\xC3\xA9"), "caf\xC3\xA9");    // valid UTF-8 kept whole
  EXPECT_EQ(display_token("abcdef", 3), "abc\xE2\x80\xA6");
  EXPECT_EQ(display_token(" a\n", 14, false), "_a\\n");
}

TEST(Colormap, EndpointsAreCividis) {
  const Rgb lo = cividis(0.0f), hi = cividis(1.0f);
  EXPECT_NEAR(lo.r, 0.0f, 1e-4f);
  EXPECT_NEAR(lo.g, 0.135112f, 1e-4f);
  EXPECT_NEAR(lo.b, 0.304751f, 1e-4f);
  EXPECT_NEAR(hi.r, 0.995737f, 1e-4f);
  EXPECT_NEAR(hi.g, 0.909344f, 1e-4f);
  EXPECT_NEAR(hi.b, 0.217772f, 1e-4f);
  // Clamped outside [0, 1].
  EXPECT_FLOAT_EQ(cividis(-3.0f).g, lo.g);
  EXPECT_FLOAT_EQ(cividis(7.0f).g, hi.g);
}

TEST(Colormap, LuminanceRisesMonotonically) {
  float prev = -1.0f;
  for (int i = 0; i <= 200; ++i) {
    const float l = relative_luminance(cividis(float(i) / 200.0f));
    EXPECT_GT(l, prev) << "at " << i;
    prev = l;
  }
  EXPECT_LT(relative_luminance(cividis(0.0f)), 0.05f);
  EXPECT_GT(relative_luminance(cividis(1.0f)), 0.75f);
}

TEST(Colormap, NoValueIsNeutralGreyAndTextStaysReadable) {
  const Rgb g = cividis(kNoValue);
  const Rgb n = no_value_grey();
  EXPECT_FLOAT_EQ(g.r, n.r);
  EXPECT_FLOAT_EQ(g.g, n.g);
  EXPECT_FLOAT_EQ(g.b, n.b);
  EXPECT_LT(std::fabs(g.r - g.g), 0.05f);  // grey: no hue to confuse with the scale
  EXPECT_LT(std::fabs(g.g - g.b), 0.05f);
  EXPECT_GT(readable_text_on(cividis(0.0f)).r, 0.9f);  // white on dark blue
  EXPECT_LT(readable_text_on(cividis(1.0f)).r, 0.1f);  // black on yellow
  char hex[8];
  to_hex(cividis(1.0f), hex);
  EXPECT_STREQ(hex, "#fee838");
  EXPECT_EQ(pack_abgr(Rgb{1.0f, 0.0f, 0.0f}), 0xFF0000FFu);
}

}  // namespace
}  // namespace specscope::ui
