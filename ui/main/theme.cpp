#include "ui/main/theme.h"

#include <QStyle>
#include <QStyleFactory>
#include <memory>

#include "ui/views/provenance.h"

namespace specscope::ui {

QPalette app_palette(bool dark) {
  if (!dark) {
    const std::unique_ptr<QStyle> fusion(QStyleFactory::create("Fusion"));
    return fusion->standardPalette();
  }
  const QColor window(0x2b, 0x2b, 0x2e), base(0x1e, 0x1e, 0x21), button(0x35, 0x35, 0x3a);
  const QColor text = token_text_color(true);
  // Disabled text: about 3:1 against the button and window, against about 10:1 for enabled text, so a
  // disabled control reads as such and its label can still be made out.
  const QColor dimmed(0x7a, 0x7a, 0x80);
  QPalette p(button, window);  // derives Light, Midlight, Mid, Dark and Shadow from the button colour
  for (const QPalette::ColorGroup g : {QPalette::Active, QPalette::Inactive, QPalette::Disabled}) {
    const bool off = g == QPalette::Disabled;
    p.setColor(g, QPalette::Window, window);
    p.setColor(g, QPalette::WindowText, off ? dimmed : text);
    p.setColor(g, QPalette::Base, off ? window : base);
    p.setColor(g, QPalette::AlternateBase, window);
    p.setColor(g, QPalette::Text, off ? dimmed : text);
    p.setColor(g, QPalette::Button, button);
    p.setColor(g, QPalette::ButtonText, off ? dimmed : text);
    p.setColor(g, QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    // White on this blue is 6:1 (the race cursor marks a step's text with it).
    p.setColor(g, QPalette::Highlight, off ? QColor(0x45, 0x45, 0x4a) : QColor(0x25, 0x63, 0xa8));
    p.setColor(g, QPalette::HighlightedText, off ? dimmed : QColor(Qt::white));
    p.setColor(g, QPalette::ToolTipBase, button);
    p.setColor(g, QPalette::ToolTipText, text);
    p.setColor(g, QPalette::PlaceholderText, QColor(0x8c, 0x8c, 0x92));
    p.setColor(g, QPalette::Link, QColor(0x6c, 0xb4, 0xff));
    p.setColor(g, QPalette::LinkVisited, QColor(0xb4, 0x8c, 0xff));
  }
  return p;
}

}  // namespace specscope::ui
