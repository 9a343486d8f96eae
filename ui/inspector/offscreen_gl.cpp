#include "ui/inspector/offscreen_gl.h"

#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLFramebufferObject>
#include <QOpenGLFunctions>

namespace specscope::ui {

OffscreenGl::OffscreenGl() = default;

OffscreenGl::~OffscreenGl() {
  // The framebuffer's objects belong to the context: delete them while it is current.
  if (fbo_ && makeCurrent()) {
    fbo_.reset();
    doneCurrent();
  }
}

bool OffscreenGl::create() {
  ctx_ = std::make_unique<QOpenGLContext>();
  ctx_->setShareContext(QOpenGLContext::globalShareContext());
  if (!ctx_->create()) {
    ctx_.reset();
    return false;
  }
  surface_ = std::make_unique<QOffscreenSurface>();
  surface_->setFormat(ctx_->format());
  surface_->create();
  if (!surface_->isValid()) {
    surface_.reset();
    ctx_.reset();
    return false;
  }
  return true;
}

bool OffscreenGl::valid() const { return ctx_ && surface_; }

bool OffscreenGl::makeCurrent() { return valid() && ctx_->makeCurrent(surface_.get()); }

void OffscreenGl::doneCurrent() {
  if (ctx_) ctx_->doneCurrent();
}

bool OffscreenGl::bind(const QSize& pixels) {
  if (!valid() || pixels.isEmpty()) return false;
  if (!fbo_ || fbo_->size() != pixels)
    fbo_ = std::make_unique<QOpenGLFramebufferObject>(pixels, QOpenGLFramebufferObject::NoAttachment);
  if (!fbo_->isValid() || !fbo_->bind()) return false;
  ctx_->functions()->glViewport(0, 0, pixels.width(), pixels.height());
  return true;
}

QImage OffscreenGl::read() const { return fbo_ ? fbo_->toImage() : QImage(); }

}  // namespace specscope::ui
