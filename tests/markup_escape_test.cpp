// The one escaper of the chat templates' `escape` filter, the HTML export and the SVG export.
#include "engine/util/markup_escape.h"

#include <gtest/gtest.h>

namespace specscope {
namespace {

TEST(MarkupEscape, EscapesTheFiveMarkupCharactersAsMarkupsafeDoes) {
  EXPECT_EQ(markup_escape(R"(<a href="x">Tom & Jerry's</a>)"),
            "&lt;a href=&#34;x&#34;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  EXPECT_EQ(markup_escape(""), "");
  EXPECT_EQ(markup_escape("plain text, \xC2\xB7 UTF-8 kept"), "plain text, \xC2\xB7 UTF-8 kept");
  // An already escaped entity is escaped again (the filter's `forceescape`; markup values skip the call).
  EXPECT_EQ(markup_escape("&amp;"), "&amp;amp;");
}

}  // namespace
}  // namespace specscope
