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

const HighContrastColors& high_contrast_colors() {
  // On black: white 21:1, the greys and colours 10-16:1 (green and yellow are bright by nature; the red and
  // violet are lightened until they reach 7:1).
  static const HighContrastColors c{QColor(0x00, 0x00, 0x00), QColor(0xff, 0xff, 0xff), QColor(0xcc, 0xcc, 0xcc),
                                    QColor(0x33, 0xff, 0x88), QColor(0xff, 0x80, 0x80), QColor(0xe8, 0xa8, 0xff),
                                    QColor(0xff, 0xdd, 0x00), QColor(0x7f, 0xdb, 0xff)};
  return c;
}

QPalette high_contrast_palette() {
  const HighContrastColors& c = high_contrast_colors();
  const QColor button(0x1a, 0x1a, 0x1a);  // white on it: 17:1; a control still reads as one against the black
  QPalette p(button, c.background);
  for (const QPalette::ColorGroup g : {QPalette::Active, QPalette::Inactive, QPalette::Disabled}) {
    const bool off = g == QPalette::Disabled;
    const QColor text = off ? QColor(0x9a, 0x9a, 0x9a) : c.text;  // disabled: still 7:1 on black
    p.setColor(g, QPalette::Window, c.background);
    p.setColor(g, QPalette::WindowText, text);
    p.setColor(g, QPalette::Base, c.background);
    p.setColor(g, QPalette::AlternateBase, button);
    p.setColor(g, QPalette::Text, text);
    p.setColor(g, QPalette::Button, button);
    p.setColor(g, QPalette::ButtonText, text);
    p.setColor(g, QPalette::BrightText, c.highlight);
    p.setColor(g, QPalette::Highlight, off ? button : c.highlight);  // black text on it: 15:1
    p.setColor(g, QPalette::HighlightedText, off ? text : c.background);
    p.setColor(g, QPalette::ToolTipBase, c.background);
    p.setColor(g, QPalette::ToolTipText, c.text);
    p.setColor(g, QPalette::PlaceholderText, c.dim);
    p.setColor(g, QPalette::Link, c.note);
    p.setColor(g, QPalette::LinkVisited, c.bonus);
    p.setColor(g, QPalette::Light, QColor(0x80, 0x80, 0x80));
    p.setColor(g, QPalette::Mid, QColor(0x60, 0x60, 0x60));
    p.setColor(g, QPalette::Dark, QColor(0xc0, 0xc0, 0xc0));  // Fusion draws frames with it: visible on black
  }
  return p;
}

}  // namespace specscope::ui
