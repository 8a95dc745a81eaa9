// The built-in mutators (r3/compiler/mutators.hpp; what each does: r3/evolve/mutators.hpp):
// what to change is found on Clang's AST, the change is made with Clang's Rewriter, and the
// result is compiled before it is offered.
#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Rewrite/Core/Rewriter.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "frontend.hpp"
#include "r3/compiler/mutators.hpp"

namespace r3::compiler {
namespace {

struct TextEdit {
  std::size_t offset = 0, length = 0;
  std::string text;
};

// Applies `edits` (offsets into `source`, not overlapping) with Clang's Rewriter, which keeps
// every offset meaning the original text however many edits come before it.
std::string splice(std::string_view source, const std::vector<TextEdit>& edits) {
  clang::FileSystemOptions file_options;
  clang::FileManager files(file_options,
                           llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>());
  clang::DiagnosticsEngine diagnostics(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(),
                                       llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>(),
                                       new clang::IgnoringDiagConsumer(), /*ShouldOwnClient=*/true);
  clang::SourceManager sources(diagnostics, files);
  const clang::FileID file =
      sources.createFileID(llvm::MemoryBuffer::getMemBufferCopy(source, "kernel"));
  clang::Rewriter rewriter(sources, clang::LangOptions());
  for (const TextEdit& e : edits) {
    const clang::SourceLocation at = sources.getComposedLoc(file, static_cast<unsigned>(e.offset));
    if (e.length == 0) {
      rewriter.InsertText(at, e.text, /*InsertAfter=*/true);
    } else {
      rewriter.ReplaceText(at, static_cast<unsigned>(e.length), e.text);
    }
  }
  const clang::RewriteBuffer* rewritten = rewriter.getRewriteBufferFor(file);
  return rewritten != nullptr ? std::string(rewritten->begin(), rewritten->end())
                              : std::string(source);
}

// What the mutators need to know of the kernel, as offsets into the main file.
struct Span {
  std::size_t begin = 0, end = 0;  // [begin, end)
};

struct Load {
  Span span;
  std::string text;  // "x[i]"
  std::string type;  // the element type, unqualified
  // Whether it happens only if the loop runs at least once (in the body, not the condition).
  bool needs_guard = false;
};

struct Loop {
  Span span;  // the whole for statement
  unsigned line = 0;
  bool has_pragma = false;
  std::optional<std::string> guard;  // the condition at the initial value of the loop variable
  std::vector<Load> hoistable;       // invariant loads, safe to read before the loop
};

struct Parameter {
  std::size_t name_offset = 0;
  bool pointer = false, restricted = false;
};

// A `#define NAME <integer>` of the main file: a compile-time size the kernel may depend on.
struct SizeMacro {
  std::int64_t value = 0;
  Span definition;  // the directive's line, from its start to the end of the value
  unsigned order = 0;
  bool redefined = false;  // defined more than once: not one size
};

// A non-type template parameter of a template kernel and where the kernel uses it.
struct TemplateParameter {
  std::string name;
  std::size_t index = 0;  // among the template's parameters
  std::vector<Span> uses;
  const void* declaration = nullptr;
};

struct Facts {
  bool found = false;
  std::vector<TemplateParameter> template_parameters;
  Span body;  // the kernel's definition
  std::map<std::string, SizeMacro> size_macros;
  std::vector<std::pair<std::string, std::size_t>> macro_uses;  // expansions in the main file
  std::vector<Span> shared_declarations;                      // __shared__ variables of the kernel
  std::vector<std::pair<Span, std::int64_t>> unroll_factors;  // `#pragma unroll N` in the kernel
  std::vector<std::pair<Span, std::int64_t>> literals;  // integer literals written in the kernel
  std::vector<std::pair<Span, std::int64_t>> loop_strides;  // `i += 256`: a for loop's literal step
  bool cuda_kernel = false, has_launch_bounds = false;
  // Whether the main file works a warp at a time (shuffles, votes, warp reductions or matches,
  // __syncwarp, warpSize), in the kernel or in what it calls: then a 32 the kernel writes is the
  // warp's size, not a tile's.
  bool warp_level = false;
  std::size_t name_offset = 0;
  std::vector<Parameter> parameters;
  std::vector<Loop> loops;
  std::vector<Load> const_reads;  // reads of pointer-to-const parameters (for __ldg)
};

const std::set<std::string> kLdgTypes = {"float",
                                         "double",
                                         "int",
                                         "unsigned int",
                                         "short",
                                         "unsigned short",
                                         "char",
                                         "signed char",
                                         "unsigned char",
                                         "long long",
                                         "unsigned long long",
                                         "long",
                                         "unsigned long"};

class Collector : public clang::RecursiveASTVisitor<Collector> {
 public:
  Collector(clang::ASTContext& context, std::string entry, Facts& facts)
      : context_(context),
        sm_(context.getSourceManager()),
        entry_(std::move(entry)),
        facts_(facts) {}

  bool VisitFunctionDecl(clang::FunctionDecl* f) {
    if (facts_.found || !f->doesThisDeclarationHaveABody()) return true;
    if (f->getNameAsString() != entry_ && f->getQualifiedNameAsString() != entry_) return true;
    if (!sm_.isInMainFile(f->getLocation())) return true;
    facts_.found = true;
    facts_.cuda_kernel = f->hasAttr<clang::CUDAGlobalAttr>();
    facts_.has_launch_bounds = f->hasAttr<clang::CUDALaunchBoundsAttr>();
    if (auto offset = file_offset(f->getLocation())) facts_.name_offset = *offset;
    for (const clang::ParmVarDecl* p : f->parameters()) {
      Parameter parameter;
      parameter.pointer = p->getType()->isPointerType();
      parameter.restricted = p->getType().isRestrictQualified();
      auto offset = p->getIdentifier() != nullptr ? file_offset(p->getLocation()) : std::nullopt;
      if (!offset) continue;
      parameter.name_offset = *offset;
      facts_.parameters.push_back(parameter);
      if (parameter.pointer && p->getType()->getPointeeType().isConstQualified())
        const_params_.insert(p);
      if (parameter.restricted) restricted_params_.insert(p);
    }
    if (auto body = expansion_span_of(f->getSourceRange())) facts_.body = *body;
    if (const clang::FunctionTemplateDecl* t = f->getDescribedFunctionTemplate()) {
      const clang::TemplateParameterList* list = t->getTemplateParameters();
      for (std::size_t i = 0; i < list->size(); ++i) {
        const auto* p = llvm::dyn_cast<clang::NonTypeTemplateParmDecl>(list->getParam(i));
        if (p == nullptr || p->getIdentifier() == nullptr || p->isParameterPack() ||
            !p->getType()->isIntegerType())
          continue;
        facts_.template_parameters.push_back({p->getNameAsString(), i, {}, p});
      }
    }
    kernel_ = f;
    collect(f->getBody());
    return true;
  }

 private:
  std::optional<std::size_t> file_offset(clang::SourceLocation loc) const {
    if (loc.isInvalid() || loc.isMacroID() || !sm_.isInMainFile(loc)) return std::nullopt;
    return sm_.getFileOffset(loc);
  }
  std::optional<Span> span_of(clang::SourceRange range) const {
    auto begin = file_offset(range.getBegin());
    clang::SourceLocation end =
        clang::Lexer::getLocForEndOfToken(range.getEnd(), 0, sm_, context_.getLangOpts());
    auto last = file_offset(end);
    if (!begin || !last) return std::nullopt;
    return Span{*begin, *last};
  }
  // The file text a range covers, macros (__global__, __shared__) expanded where they are used.
  std::optional<Span> expansion_span_of(clang::SourceRange range) const {
    return span_of(clang::SourceRange(sm_.getExpansionLoc(range.getBegin()),
                                      sm_.getExpansionLoc(range.getEnd())));
  }
  std::string text_of(const Span& s) const {
    return std::string(sm_.getBufferData(sm_.getMainFileID()).substr(s.begin, s.end - s.begin));
  }

  // Where an integer literal is written in the file; nullopt where a macro wrote it.
  std::optional<Span> literal_span(const clang::IntegerLiteral* literal) const {
    auto at = file_offset(literal->getLocation());
    if (!at) return std::nullopt;
    return Span{*at, *at + clang::Lexer::MeasureTokenLength(literal->getLocation(), sm_,
                                                            context_.getLangOpts())};
  }
  void note_literal(const clang::IntegerLiteral* literal) {
    if (auto span = literal_span(literal))
      facts_.literals.push_back({*span, literal->getValue().getSExtValue()});
  }

  // Warp-level code anywhere in the main file (the kernel's own body, the __device__ helpers it
  // calls, templates whose calls are still unresolved): a call of a warp-level intrinsic, by its
  // name (CUDA's headers declare them as functions), or a read of warpSize. The headers' own
  // uses do not count.
  bool in_main_file(clang::SourceLocation loc) const {
    return loc.isValid() && sm_.isInMainFile(sm_.getExpansionLoc(loc));
  }
  void note_if_warp_level(llvm::StringRef name) {
    for (const char* prefix : {"__shfl", "__ballot", "__any_sync", "__all_sync", "__activemask",
                               "__reduce_", "__match_", "__syncwarp"})
      if (name.starts_with(prefix)) facts_.warp_level = true;
  }

 public:
  bool VisitCallExpr(clang::CallExpr* call) {
    if (facts_.warp_level || !in_main_file(call->getBeginLoc())) return true;
    if (const clang::FunctionDecl* callee = call->getDirectCallee();
        callee != nullptr && callee->getIdentifier() != nullptr) {
      note_if_warp_level(callee->getName());
    } else if (const auto* overloads = llvm::dyn_cast<clang::OverloadExpr>(
                   call->getCallee()->IgnoreImpCasts())) {
      note_if_warp_level(overloads->getName().getAsString());
    }
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
    const clang::IdentifierInfo* id = ref->getDecl()->getIdentifier();
    if (id != nullptr && id->getName() == "warpSize" && in_main_file(ref->getLocation()))
      facts_.warp_level = true;
    return true;
  }

 private:

  // A use of one of the kernel's template parameters, written in the kernel (not by a macro).
  void note_template_parameter_use(const clang::DeclRefExpr* ref) {
    for (TemplateParameter& p : facts_.template_parameters) {
      if (p.declaration != ref->getDecl()) continue;
      if (auto at = file_offset(ref->getLocation())) {
        Span use{*at, *at + p.name.size()};
        if (std::none_of(p.uses.begin(), p.uses.end(),
                         [&](const Span& u) { return u.begin == use.begin; }))
          p.uses.push_back(use);
      }
    }
  }

  // A read of p[i] with p a parameter pointing to const (an rvalue: under an LValueToRValue cast).
  const clang::ParmVarDecl* const_param_read(const clang::Expr* e) const {
    const auto* cast = llvm::dyn_cast<clang::ImplicitCastExpr>(e);
    if (cast == nullptr || cast->getCastKind() != clang::CK_LValueToRValue) return nullptr;
    const auto* subscript =
        llvm::dyn_cast<clang::ArraySubscriptExpr>(cast->getSubExpr()->IgnoreParens());
    if (subscript == nullptr) return nullptr;
    const auto* ref =
        llvm::dyn_cast<clang::DeclRefExpr>(subscript->getBase()->IgnoreParenImpCasts());
    const auto* param =
        ref != nullptr ? llvm::dyn_cast<clang::ParmVarDecl>(ref->getDecl()) : nullptr;
    return param != nullptr && const_params_.contains(param) ? param : nullptr;
  }

  // Variables written, memory written, and calls that might write memory, within a statement.
  struct Effects {
    std::set<const clang::VarDecl*> written;
    std::set<const clang::VarDecl*> declared;
    bool writes_memory = false;
  };
  static const clang::VarDecl* variable(const clang::Expr* e) {
    const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
    return ref != nullptr ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
  }
  static bool is_memory(const clang::Expr* e) {
    e = e->IgnoreParenImpCasts();
    if (llvm::isa<clang::ArraySubscriptExpr>(e)) return true;
    if (const auto* u = llvm::dyn_cast<clang::UnaryOperator>(e))
      return u->getOpcode() == clang::UO_Deref;
    if (const auto* m = llvm::dyn_cast<clang::MemberExpr>(e))
      return m->isArrow() || is_memory(m->getBase());
    return false;
  }
  void effects(const clang::Stmt* s, Effects& out) const {
    if (s == nullptr) return;
    if (const auto* b = llvm::dyn_cast<clang::BinaryOperator>(s);
        b != nullptr && b->isAssignmentOp()) {
      if (const clang::VarDecl* v = variable(b->getLHS())) out.written.insert(v);
      if (is_memory(b->getLHS())) out.writes_memory = true;
    }
    if (const auto* u = llvm::dyn_cast<clang::UnaryOperator>(s)) {
      if (u->isIncrementDecrementOp()) {
        if (const clang::VarDecl* v = variable(u->getSubExpr())) out.written.insert(v);
        if (is_memory(u->getSubExpr())) out.writes_memory = true;
      }
      if (u->getOpcode() == clang::UO_AddrOf) {
        if (const clang::VarDecl* v = variable(u->getSubExpr()))
          out.written.insert(v);  // may be written
      }
    }
    if (const auto* call = llvm::dyn_cast<clang::CallExpr>(s)) {
      const clang::FunctionDecl* callee = call->getDirectCallee();
      const bool harmless =
          callee != nullptr && (callee->getBuiltinID() != 0 || callee->isConstexpr());
      if (!harmless) out.writes_memory = true;
    }
    if (const auto* d = llvm::dyn_cast<clang::DeclStmt>(s)) {
      for (const clang::Decl* decl : d->decls()) {
        if (const auto* v = llvm::dyn_cast<clang::VarDecl>(decl)) out.declared.insert(v);
      }
    }
    for (const clang::Stmt* child : s->children()) effects(child, out);
  }

  void collect(const clang::Stmt* s) {
    if (s == nullptr) return;
    if (const auto* attributed = llvm::dyn_cast<clang::AttributedStmt>(s)) {
      for (const clang::Attr* a : attributed->getAttrs()) {
        if (const auto* hint = llvm::dyn_cast<clang::LoopHintAttr>(a)) {
          pragma_loops_.insert(attributed->getSubStmt());
          // `#pragma unroll 4`: the factor, where it is written as a number in the file.
          const auto* count = llvm::dyn_cast_or_null<clang::IntegerLiteral>(
              hint->getValue() ? hint->getValue()->IgnoreParenImpCasts() : nullptr);
          if (hint->getOption() == clang::LoopHintAttr::UnrollCount && count != nullptr) {
            if (auto span = literal_span(count))
              facts_.unroll_factors.push_back({*span, count->getValue().getSExtValue()});
          }
        }
      }
    }
    if (const auto* e = llvm::dyn_cast<clang::Expr>(s);
        e != nullptr && const_param_read(e) != nullptr) {
      const auto* subscript = llvm::cast<clang::ArraySubscriptExpr>(
          llvm::cast<clang::ImplicitCastExpr>(e)->getSubExpr()->IgnoreParens());
      if (auto span = span_of(subscript->getSourceRange())) {
        clang::QualType element = subscript->getType().getUnqualifiedType();
        facts_.const_reads.push_back({*span, text_of(*span), element.getAsString()});
      }
    }
    if (const auto* loop = llvm::dyn_cast<clang::ForStmt>(s)) analyse(loop);
    if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(s)) note_template_parameter_use(ref);
    if (const auto* literal = llvm::dyn_cast<clang::IntegerLiteral>(s)) note_literal(literal);
    if (const auto* declaration = llvm::dyn_cast<clang::DeclStmt>(s)) {
      for (const clang::Decl* d : declaration->decls()) {
        const auto* v = llvm::dyn_cast<clang::VarDecl>(d);
        if (v != nullptr && v->hasAttr<clang::CUDASharedAttr>()) {
          if (auto span = expansion_span_of(declaration->getSourceRange()))
            facts_.shared_declarations.push_back(*span);
          // Array sizes are not statements: their literals are collected here.
          clang::TypeLoc type =
              v->getTypeSourceInfo() ? v->getTypeSourceInfo()->getTypeLoc() : clang::TypeLoc();
          for (auto array = type.getAs<clang::ArrayTypeLoc>(); !array.isNull();
               array = array.getElementLoc().getAs<clang::ArrayTypeLoc>()) {
            const clang::Expr* size_expr =
                array.getSizeExpr() ? array.getSizeExpr()->IgnoreParenImpCasts() : nullptr;
            // (Nor are a template parameter's uses there.)
            if (const auto* ref = llvm::dyn_cast_or_null<clang::DeclRefExpr>(size_expr))
              note_template_parameter_use(ref);
            if (const auto* size = llvm::dyn_cast_or_null<clang::IntegerLiteral>(size_expr))
              note_literal(size);
          }
        }
      }
    }
    for (const clang::Stmt* child : s->children()) collect(child);
  }

  // Whether a loop body may stop before reaching its end (then a load near its end may never
  // happen, even in the first iteration).
  static bool leaves_early(const clang::Stmt* s) {
    if (s == nullptr) return false;
    if (llvm::isa<clang::ReturnStmt, clang::GotoStmt, clang::BreakStmt, clang::ContinueStmt,
                  clang::CXXThrowExpr>(s)) {
      return true;
    }
    for (const clang::Stmt* child : s->children()) {
      if (leaves_early(child)) return true;
    }
    return false;
  }

  void analyse(const clang::ForStmt* loop) {
    auto span = span_of(loop->getSourceRange());
    if (!span) return;
    Loop l;
    l.span = *span;
    l.line = sm_.getSpellingLineNumber(loop->getBeginLoc());
    l.has_pragma = pragma_loops_.contains(loop);
    // The guard: the condition with the loop variable replaced by its initial value.
    const auto* init = llvm::dyn_cast_or_null<clang::DeclStmt>(loop->getInit());
    const clang::VarDecl* counter = init != nullptr && init->isSingleDecl()
                                        ? llvm::dyn_cast<clang::VarDecl>(init->getSingleDecl())
                                        : nullptr;
    if (counter != nullptr && counter->getInit() != nullptr && loop->getCond() != nullptr) {
      auto initial = span_of(counter->getInit()->getSourceRange());
      auto condition = span_of(loop->getCond()->getSourceRange());
      if (initial && condition) {
        std::vector<TextEdit> uses;
        bool ok = true;
        std::function<void(const clang::Stmt*)> find = [&](const clang::Stmt* x) {
          if (x == nullptr) return;
          if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(x);
              ref != nullptr && ref->getDecl() == counter) {
            auto at = span_of(ref->getSourceRange());
            if (!at)
              ok = false;
            else
              uses.push_back({at->begin - condition->begin, at->end - at->begin,
                              "(" + text_of(*initial) + ")"});
          }
          for (const clang::Stmt* c : x->children()) find(c);
        };
        find(loop->getCond());
        if (ok && !loop->getCond()->HasSideEffects(context_))
          l.guard = splice(text_of(*condition), uses);
      }
    }
    note_literal_step(loop->getInc());
    // A statement's range ends before its last ';' (`for (...) x += y[i];`).
    const llvm::StringRef buffer = sm_.getBufferData(sm_.getMainFileID());
    if (std::size_t next = buffer.find_first_not_of(" \t\r\n", l.span.end);
        !llvm::isa<clang::CompoundStmt>(loop->getBody()) && next < buffer.size() &&
        buffer[next] == ';') {
      l.span.end = next + 1;
    }
    if (!l.has_pragma) {
      Effects inside;
      effects(loop, inside);
      if (counter != nullptr) inside.written.insert(counter);
      bool in_body = false;
      std::function<void(const clang::Stmt*)> loads = [&](const clang::Stmt* x) {
        if (x == nullptr) return;
        // Only loads every iteration makes: hoisting one the original may skip (behind an if,
        // a ?:, a && or ||, in an inner loop) could read memory it never reads.
        if (const auto* branch = llvm::dyn_cast<clang::IfStmt>(x)) return loads(branch->getCond());
        if (const auto* choice = llvm::dyn_cast<clang::ConditionalOperator>(x))
          return loads(choice->getCond());
        if (const auto* logic = llvm::dyn_cast<clang::BinaryOperator>(x);
            logic != nullptr && logic->isLogicalOp()) {
          return loads(logic->getLHS());
        }
        if (llvm::isa<clang::ForStmt, clang::WhileStmt, clang::DoStmt, clang::SwitchStmt,
                      clang::CXXForRangeStmt>(x)) {
          return;
        }
        if (const auto* e = llvm::dyn_cast<clang::Expr>(x)) {
          if (const clang::ParmVarDecl* base = const_param_read(e)) {
            const auto* subscript = llvm::cast<clang::ArraySubscriptExpr>(
                llvm::cast<clang::ImplicitCastExpr>(e)->getSubExpr()->IgnoreParens());
            const clang::Expr* index = subscript->getIdx();
            bool invariant = !index->HasSideEffects(context_);
            std::function<void(const clang::Stmt*)> uses = [&](const clang::Stmt* y) {
              if (y == nullptr) return;
              if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(y)) {
                const auto* v = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
                if (v == nullptr || inside.written.contains(v) || inside.declared.contains(v))
                  invariant = false;
              }
              for (const clang::Stmt* c : y->children()) uses(c);
            };
            uses(index);
            const bool unaliased = restricted_params_.contains(base) || !inside.writes_memory;
            clang::QualType element = subscript->getType().getUnqualifiedType();
            auto at = span_of(subscript->getSourceRange());
            if (invariant && unaliased && element->isBuiltinType() && at) {
              l.hoistable.push_back({*at, text_of(*at), element.getAsString(), in_body});
            }
          }
        }
        for (const clang::Stmt* c : x->children()) loads(c);
      };
      // The condition is evaluated at least once; the body only when the guard holds.
      loads(loop->getCond());
      if (l.guard && !leaves_early(loop->getBody())) {
        in_body = true;
        loads(loop->getBody());
      }
    }
    facts_.loops.push_back(std::move(l));
  }

  // A loop step written as a number: `i += 256`, `i -= 256`, `i = i + 256`.
  void note_literal_step(const clang::Expr* increment) {
    if (increment == nullptr) return;
    increment = increment->IgnoreParens();
    const clang::Expr* step = nullptr;
    if (const auto* compound = llvm::dyn_cast<clang::CompoundAssignOperator>(increment)) {
      if (compound->getOpcode() == clang::BO_AddAssign ||
          compound->getOpcode() == clang::BO_SubAssign)
        step = compound->getRHS();
    } else if (const auto* assign = llvm::dyn_cast<clang::BinaryOperator>(increment);
               assign != nullptr && assign->getOpcode() == clang::BO_Assign) {
      const auto* sum =
          llvm::dyn_cast<clang::BinaryOperator>(assign->getRHS()->IgnoreParenImpCasts());
      if (sum != nullptr && sum->getOpcode() == clang::BO_Add &&
          variable(sum->getLHS()) == variable(assign->getLHS()) && variable(sum->getLHS()))
        step = sum->getRHS();
    }
    const auto* literal = step != nullptr
                              ? llvm::dyn_cast<clang::IntegerLiteral>(step->IgnoreParenImpCasts())
                              : nullptr;
    if (literal == nullptr) return;
    if (auto span = literal_span(literal))
      facts_.loop_strides.push_back({*span, literal->getValue().getSExtValue()});
  }

  clang::ASTContext& context_;
  clang::SourceManager& sm_;
  std::string entry_;
  Facts& facts_;
  const clang::FunctionDecl* kernel_ = nullptr;
  std::set<const clang::ParmVarDecl*> const_params_, restricted_params_;
  std::set<const clang::Stmt*> pragma_loops_;
};

// The main file's integer macros and where macros are expanded in it.
class SizeMacroRecorder : public clang::PPCallbacks {
 public:
  SizeMacroRecorder(clang::SourceManager& sm, const clang::LangOptions& lang, Facts& facts)
      : sm_(sm), lang_(lang), facts_(facts) {}

  void MacroDefined(const clang::Token& name, const clang::MacroDirective* directive) override {
    const clang::SourceLocation at = name.getLocation();
    if (!at.isFileID() || !sm_.isInMainFile(at)) return;
    const std::string id = name.getIdentifierInfo()->getName().str();
    if (auto it = facts_.size_macros.find(id); it != facts_.size_macros.end()) {
      it->second.redefined = true;
      return;
    }
    const clang::MacroInfo* info = directive->getMacroInfo();
    if (info->isFunctionLike() || info->getNumTokens() != 1 ||
        !info->getReplacementToken(0).is(clang::tok::numeric_constant))
      return;
    const clang::Token& literal = info->getReplacementToken(0);
    const std::string text = clang::Lexer::getSpelling(literal, sm_, lang_);
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == 0 || digits > 9 || (text.size() > 1 && text[0] == '0')) return;
    for (char c : text.substr(digits))
      if (c != 'u' && c != 'U' && c != 'l' && c != 'L') return;
    const llvm::StringRef buffer = sm_.getBufferData(sm_.getMainFileID());
    std::size_t begin = sm_.getFileOffset(at);
    while (begin > 0 && buffer[begin - 1] != '\n') --begin;
    SizeMacro m;
    m.value = std::stoll(text.substr(0, digits));
    m.definition = {begin, sm_.getFileOffset(literal.getLocation()) + literal.getLength()};
    m.order = static_cast<unsigned>(facts_.size_macros.size());
    facts_.size_macros.emplace(id, m);
  }
  void MacroUndefined(const clang::Token& name, const clang::MacroDefinition&,
                      const clang::MacroDirective*) override {
    if (auto it = facts_.size_macros.find(name.getIdentifierInfo()->getName().str());
        it != facts_.size_macros.end())
      it->second.redefined = true;
  }
  void MacroExpands(const clang::Token& name, const clang::MacroDefinition&,
                    clang::SourceRange range, const clang::MacroArgs*) override {
    const clang::SourceLocation at = sm_.getFileLoc(range.getBegin());
    if (at.isValid() && sm_.isInMainFile(at))
      facts_.macro_uses.push_back(
          {name.getIdentifierInfo()->getName().str(), sm_.getFileOffset(at)});
  }

 private:
  clang::SourceManager& sm_;
  const clang::LangOptions& lang_;
  Facts& facts_;
};

class CollectAction : public clang::ASTFrontendAction {
 public:
  CollectAction(std::string entry, Facts& facts) : entry_(std::move(entry)), facts_(facts) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& instance,
                                                        llvm::StringRef) override {
    instance.getPreprocessor().addPPCallbacks(std::make_unique<SizeMacroRecorder>(
        instance.getSourceManager(), instance.getLangOpts(), facts_));
    struct Consumer : clang::ASTConsumer {
      std::string entry;
      Facts* facts;
      void HandleTranslationUnit(clang::ASTContext& context) override {
        Collector(context, entry, *facts).TraverseDecl(context.getTranslationUnitDecl());
      }
    };
    auto consumer = std::make_unique<Consumer>();
    consumer->entry = entry_;
    consumer->facts = &facts_;
    return consumer;
  }

 private:
  std::string entry_;
  Facts& facts_;
};

// `text` under `name`, read as the application's build reads it (MutationContext).
Source make_source(std::string_view text, std::string_view name, const MutationContext& context) {
  Source s;
  s.name = std::string(name);
  s.text = std::string(text);
  s.defines = context.defines;
  s.include_dirs = context.include_dirs;
  s.flags = context.flags;
  return s;
}

// "R3_UNROLL_" -> the first "R3_UNROLL_<n>" the source does not use yet.
std::string fresh_name(std::string_view source, const std::string& prefix) {
  for (int n = 0;; ++n) {
    std::string name = prefix + std::to_string(n);
    if (source.find(name) == std::string_view::npos) return name;
  }
}

// Declarations that make a tunable's macro defined whether or not the build sets it.
std::string declare(const Tunable& t) {
  std::string values;
  for (const std::string& v : t.values) values += (values.empty() ? "" : " ") + v;
  return "R3_TUNABLE(" + t.name + ", " + t.default_value + ", " + values + ")\n#ifndef " + t.name +
         "\n#define " + t.name + " " + t.default_value + "\n#endif\n";
}

std::string preamble(const std::vector<Tunable>& tunables, const std::string& more = "") {
  std::string out = "#ifndef R3_TUNABLE\n#define R3_TUNABLE(...)\n#endif\n";
  for (const Tunable& t : tunables) out += declare(t);
  return out + more;
}

// The white space before `offset` on its line, if only white space precedes it.
std::string indentation(std::string_view source, std::size_t offset) {
  const std::size_t line = source.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t begin = line == std::string_view::npos ? 0 : line + 1;
  std::string_view before = source.substr(begin, offset - begin);
  return before.find_first_not_of(" \t") == std::string_view::npos ? std::string(before) : "";
}

std::string first_error(const std::string& diagnostics) {
  for (std::size_t at = 0; at < diagnostics.size();) {
    std::size_t end = diagnostics.find('\n', at);
    if (end == std::string::npos) end = diagnostics.size();
    std::string line = diagnostics.substr(at, end - at);
    if (line.find("error:") != std::string::npos) return line;
    at = end + 1;
  }
  return diagnostics.substr(0, diagnostics.find('\n'));
}

constexpr std::int64_t kWarpSize = 32;

bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// An integer template argument as a demangled name writes it: "32", "32u", "64ul", "(int)16",
// "(unsigned long)8"; nullopt for types and anything else.
std::optional<std::int64_t> integer_argument(std::string text) {
  if (!text.empty() && text.front() == '(') {
    std::size_t close = text.find(')');
    if (close == std::string::npos) return std::nullopt;
    text = text.substr(close + 1);
  }
  while (!text.empty() &&
         (text.back() == 'u' || text.back() == 'U' || text.back() == 'l' || text.back() == 'L'))
    text.pop_back();
  if (text.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    std::int64_t value = std::stoll(text, &used, 0);
    if (used != text.size()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The kernel's compile-time sizes as tunables (see mutators.hpp): each qualifying macro keeps
// its definition where it is, guarded by #ifndef so that the search can set it, and is declared
// R3_TUNABLE at the top; sizes equal to a recorded block dimension couple the launch to them.
std::vector<Mutation> parametrise(std::string_view source, const Facts& facts,
                                  const MutationContext& context) {
  const std::vector<std::string>& declared = context.declared_tunables;
  const bool coupled_already = context.launch_coupled;
  auto inside = [](const Span& span, std::size_t offset) {
    return offset >= span.begin && offset < span.end;
  };
  struct Found {
    std::string name;
    const SizeMacro* macro;
    bool in_shared = false;
    std::vector<Span> literals;      // a tile size written as a number: every place it is written
    std::string template_parameter;  // or the template parameter whose uses these are
    bool loop_stride = false;        // or the loops' steps of this size
  };
  std::vector<Found> found;
  std::deque<SizeMacro> literal_sizes;  // the numbers' stand-ins (stable addresses)
  for (const auto& [name, macro] : facts.size_macros) {
    if (macro.redefined || !power_of_two(macro.value) || macro.value < 2 || macro.value > 4096)
      continue;
    if (std::find(declared.begin(), declared.end(), name) != declared.end()) continue;
    Found f{name, &macro, false, {}, ""};
    bool used = false;
    for (const auto& [used_name, at] : facts.macro_uses) {
      if (used_name != name || !inside(facts.body, at)) continue;
      used = true;
      for (const Span& shared : facts.shared_declarations)
        f.in_shared = f.in_shared || inside(shared, at);
    }
    if (used) found.push_back(f);
  }
  // A number that sizes __shared__ data (`float tile[16][16]`) is a tile size written out: each
  // place the kernel writes that number becomes the tunable (verification tells where one was
  // not the tile).
  std::string taken(source);
  std::set<std::int64_t> tiles;
  for (const auto& [span, value] : facts.literals)
    for (const Span& shared : facts.shared_declarations)
      if (inside(shared, span.begin) && power_of_two(value) && value >= 4 && value <= 4096)
        tiles.insert(value);
  // A size that no macro names: a stand-in, ordered after the macros.
  auto stand_in = [&](std::int64_t value) {
    SizeMacro& size = literal_sizes.emplace_back();
    size.value = value;
    size.order = static_cast<unsigned>(facts.size_macros.size() + literal_sizes.size());
    return &size;
  };
  for (std::int64_t value : tiles) {
    Found f{fresh_name(taken, "R3_TILE_"), stand_in(value), true, {}, ""};
    taken += " " + f.name;
    std::set<std::size_t> seen;
    for (const auto& [span, v] : facts.literals)
      if (v == value && inside(facts.body, span.begin) && seen.insert(span.begin).second)
        f.literals.push_back(span);
    found.push_back(std::move(f));
  }
  // A template kernel's integer parameters, at the recorded instance's values: each place the
  // kernel uses one becomes the tunable (the instance compiled stays the recorded one; its
  // parameter is then unused).
  for (const TemplateParameter& p : facts.template_parameters) {
    if (p.uses.empty() || p.index >= context.template_arguments.size()) continue;
    std::optional<std::int64_t> value = integer_argument(context.template_arguments[p.index]);
    if (!value || !power_of_two(*value) || *value < 2 || *value > 4096) continue;
    Found f{fresh_name(taken, "R3_" + p.name + "_"), stand_in(*value), false, p.uses, p.name};
    taken += " " + f.name;
    for (const Span& use : p.uses)
      for (const Span& shared : facts.shared_declarations)
        f.in_shared = f.in_shared || inside(shared, use.begin);
    found.push_back(std::move(f));
  }
  // A loop stepping by a recorded block dimension written as a number (`for (j = threadIdx.x;
  // j < n; j += 128)`) walks its data a block at a time: its step follows the block, as a size
  // of its own or as the size the block follows.
  const std::array<std::uint32_t, 3>& block = context.recorded_block;
  std::map<std::int64_t, std::vector<Span>> strides;
  for (const auto& [span, value] : facts.loop_strides) {
    const bool covered = std::any_of(found.begin(), found.end(), [&](const Found& f) {
      return std::any_of(f.literals.begin(), f.literals.end(),
                         [&](const Span& at) { return at.begin == span.begin; });
    });
    if (!covered && value >= 2 && inside(facts.body, span.begin) &&
        std::find(block.begin(), block.end(), value) != block.end())
      strides[value].push_back(span);
  }
  for (auto& [value, spans] : strides) {
    Found f{fresh_name(taken, "R3_STRIDE_"), stand_in(value), false, spans, "", true};
    taken += " " + f.name;
    found.push_back(std::move(f));
  }
  // No size of 32 in a kernel that works a warp at a time: there it is the warp's size
  // (`__shared__ float sums[32]`, one per warp, indexed `threadIdx.x / 32`; shuffles over 32
  // lanes), and another value writes outside the array at large blocks, which loses the
  // candidate's GPU context (seconds on a GPU) rather than failing verification.
  if (facts.warp_level)
    std::erase_if(found, [](const Found& f) { return f.macro->value == kWarpSize; });
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.macro->order < b.macro->order; });
  // Which size each block dimension follows: a macro of its value (one named for the axis, X or
  // Y, where several are).
  std::array<const Found*, 3> follows{nullptr, nullptr, nullptr};
  if (!coupled_already && block[0] > 0) {
    for (int d = 0; d < 3; ++d) {
      if (d > 0 && block[d] <= 1) continue;
      const char axis = "XYZ"[d];
      for (const Found& f : found) {
        if (f.macro->value != block[d]) continue;
        const bool named = f.name.find(axis) != std::string::npos;
        if (follows[d] == nullptr || (named && follows[d]->name.find(axis) == std::string::npos))
          follows[d] = &f;
      }
    }
  }
  std::vector<Tunable> tunables;
  std::vector<Tunable> defined_here;  // tunables nothing in the source defines (tile numbers)
  std::vector<TextEdit> edits;
  std::string described;
  std::vector<const Found*>
      following;  // loop steps that take the name of the size the block follows
  for (const Found& f : found) {
    const bool shapes_launch = std::find(follows.begin(), follows.end(), &f) != follows.end();
    if (f.loop_stride && !shapes_launch) following.push_back(&f);
    if (!shapes_launch && !f.in_shared) continue;
    const std::int64_t d = f.macro->value;
    std::vector<std::string> values;
    for (std::int64_t v : shapes_launch ? std::vector<std::int64_t>{d / 4, d / 2, d, 2 * d, 4 * d}
                                        : std::vector<std::int64_t>{d / 2, d, 2 * d}) {
      if (v < 2) continue;
      if (shapes_launch) {
        std::int64_t threads = 1;
        for (int dim = 0; dim < 3; ++dim)
          threads *= follows[dim] == &f ? v : std::max<std::uint32_t>(1, block[dim]);
        if (threads > 1024) continue;
      }
      values.push_back(std::to_string(v));
    }
    if (values.size() < 2) continue;
    Tunable t{f.name, std::to_string(d), values};
    if (f.literals.empty()) {
      const Span& def = f.macro->definition;
      const std::string line(source.substr(def.begin, def.end - def.begin));
      edits.push_back(
          {def.begin, def.end - def.begin, "#ifndef " + f.name + "\n" + line + "\n#endif"});
    } else {
      for (const Span& at : f.literals) edits.push_back({at.begin, at.end - at.begin, f.name});
      defined_here.push_back(t);
    }
    const std::string what = f.literals.empty() ? f.name
                             : !f.template_parameter.empty()
                                 ? "template parameter " + f.template_parameter + " as " + f.name
                             : f.loop_stride
                                 ? "the loop step " + std::to_string(d) + " as " + f.name
                                 : "the number " + std::to_string(d) + " as " + f.name;
    described += (described.empty() ? "" : ", ") + what + " (" + std::to_string(d) +
                 (shapes_launch ? ", shapes the launch" : ", sizes __shared__ data") + ")";
    tunables.push_back(std::move(t));
  }
  for (const Found* step : following) {
    for (const Found* leader : follows) {
      if (leader == nullptr || leader->macro->value != step->macro->value ||
          std::none_of(tunables.begin(), tunables.end(),
                       [&](const Tunable& t) { return t.name == leader->name; }))
        continue;
      for (const Span& at : step->literals)
        edits.push_back({at.begin, at.end - at.begin, leader->name});
      described += (described.empty() ? "" : ", ") + std::string("the loop step ") +
                   std::to_string(step->macro->value) + " as " + leader->name;
      break;
    }
  }
  // The unroll factors the kernel states as numbers become tunables too (their definitions go
  // at the top: nothing defines them where they are used).
  std::vector<Tunable> factors;
  for (const auto& [span, factor] : facts.unroll_factors) {
    if (factor < 1 || factor > 64) continue;
    Tunable t{fresh_name(taken, "R3_UNROLL_"), std::to_string(factor), {}};
    taken += " " + t.name;
    for (std::int64_t v : {std::int64_t{1}, factor / 2, factor, factor * 2, std::int64_t{16}})
      if (v >= 1 &&
          std::find(t.values.begin(), t.values.end(), std::to_string(v)) == t.values.end())
        t.values.push_back(std::to_string(v));
    edits.push_back({span.begin, span.end - span.begin, t.name});
    described += (described.empty() ? "" : ", ") + std::string("unroll factor ") +
                 std::to_string(factor) + " (" + t.name + ")";
    factors.push_back(t);
  }
  if (tunables.empty() && factors.empty()) return {};
  std::string top = "#ifndef R3_TUNABLE\n#define R3_TUNABLE(...)\n#endif\n";
  for (const Tunable& t : tunables) {
    if (std::find(defined_here.begin(), defined_here.end(), t) != defined_here.end()) {
      top += declare(t);
      continue;
    }
    std::string values;
    for (const std::string& v : t.values) values += (values.empty() ? "" : " ") + v;
    top += "R3_TUNABLE(" + t.name + ", " + t.default_value + ", " + values + ")\n";
  }
  for (const Tunable& t : factors) top += declare(t);
  tunables.insert(tunables.end(), factors.begin(), factors.end());
  std::string coupling;
  if (follows[0] != nullptr || follows[1] != nullptr || follows[2] != nullptr) {
    std::array<std::string, 3> dims;
    for (int d = 0; d < 3; ++d)
      dims[d] = follows[d] != nullptr ? follows[d]->name
                                      : std::to_string(std::max<std::uint32_t>(1, block[d]));
    coupling = "R3_LAUNCH_BLOCK(" + dims[0] + ", " + dims[1] + ", " + dims[2] + ")";
    top += kLaunchBlockPreamble + coupling + "\n";
  }
  const std::string description =
      "compile-time sizes as tunables: " + described +
      (coupling.empty() ? "" : "; block " + coupling.substr(16, coupling.size() - 17));
  std::vector<Mutation> out;
  edits.push_back({0, 0, top});
  out.push_back({"parametrise",
                 description + (coupling.empty() ? "" : ", grid covering the recorded threads"),
                 splice(source, edits), tunables});
  // Whether the grid covers the threads (one element each) or the blocks (one item each, a box,
  // a row) is not in the source's sizes: both are offered, and verification tells.
  if (!coupling.empty()) {
    edits.back().text = top + kKeepGridDeclaration + "\n";
    out.push_back(
        {"parametrise", description + ", the recorded grid", splice(source, edits), tunables});
  }
  return out;
}

}  // namespace

bool compiles(std::string_view source, std::string_view file_name, SourceLanguage language,
              std::string& diagnostics, const MutationContext& context) {
  clang::SyntaxOnlyAction action;
  return run_frontend(make_source(source, file_name, context),
                      language == SourceLanguage::cuda ? Dialect::cuda : Dialect::cpp, action,
                      diagnostics);
}

MutationReport mutate(std::string_view source, std::string_view file_name, std::string_view entry,
                      SourceLanguage language, const std::vector<std::string>& mutators,
                      const MutationContext& context) {
  MutationReport report;
  Facts facts;
  CollectAction action{std::string(entry), facts};
  const Dialect dialect = language == SourceLanguage::cuda ? Dialect::cuda : Dialect::cpp;
  if (!run_frontend(make_source(source, file_name, context), dialect, action, report.diagnostics)) {
    return report;
  }
  if (!facts.found) {
    report.diagnostics +=
        "no definition of '" + std::string(entry) + "' in " + std::string(file_name) + "\n";
    return report;
  }
  const bool cuda = language == SourceLanguage::cuda;
  auto wanted = [&](const char* name) {
    return std::find(mutators.begin(), mutators.end(), name) != mutators.end();
  };
  auto offer = [&](Mutation m) {
    std::string diagnostics;
    if (compiles(m.source, file_name, language, diagnostics, context)) {
      report.mutations.push_back(std::move(m));
    } else {
      report.rejected.push_back({std::move(m), first_error(diagnostics)});
    }
  };

  if (wanted("restrict") && source.find("R3_USE_RESTRICT") == std::string_view::npos) {
    std::vector<TextEdit> edits;
    for (const Parameter& p : facts.parameters) {
      if (p.pointer && !p.restricted) edits.push_back({p.name_offset, 0, "R3_RESTRICT "});
    }
    if (!edits.empty()) {
      Tunable t{"R3_USE_RESTRICT", "1", {"0", "1"}};
      const std::string keyword = cuda ? "__restrict__" : "__restrict";
      edits.push_back({0, 0,
                       preamble({t}, "#if R3_USE_RESTRICT\n#define R3_RESTRICT " + keyword +
                                         "\n#else\n#define R3_RESTRICT\n#endif\n")});
      offer({"restrict",
             "__restrict__ on " + std::to_string(edits.size() - 1) + " pointer parameter(s)",
             splice(source, edits),
             {t}});
    }
  }
  if (wanted("unroll")) {
    for (const Loop& loop : facts.loops) {
      if (loop.has_pragma) continue;
      Tunable t{fresh_name(source, "R3_UNROLL_"), "4", {"1", "2", "4", "8"}};
      std::vector<TextEdit> edits = {{loop.span.begin, 0, "\n#pragma unroll " + t.name + "\n"},
                                     {0, 0, preamble({t})}};
      offer({"unroll",
             "#pragma unroll " + t.name + " on the loop at line " + std::to_string(loop.line),
             splice(source, edits),
             {t}});
    }
  }
  if (wanted("launch_bounds") && cuda && facts.cuda_kernel && !facts.has_launch_bounds) {
    Tunable threads{"R3_MAX_THREADS", "1024", {"128", "256", "512", "1024"}};
    Tunable blocks{"R3_MIN_BLOCKS", "1", {"1", "2", "4"}};
    std::vector<TextEdit> edits = {
        {facts.name_offset, 0, "__launch_bounds__(R3_MAX_THREADS, R3_MIN_BLOCKS) "},
        {0, 0, preamble({threads, blocks})}};
    offer({"launch_bounds",
           "__launch_bounds__(R3_MAX_THREADS, R3_MIN_BLOCKS)",
           splice(source, edits),
           {threads, blocks}});
  }
  if (wanted("ldg") && cuda && source.find("R3_LDG") == std::string_view::npos) {
    std::vector<TextEdit> edits;
    for (const Load& read : facts.const_reads) {
      // Insertions, not replacements, so that nested reads (x[columns[k]]) compose.
      if (kLdgTypes.contains(read.type)) {
        edits.push_back({read.span.begin, 0, "R3_LDG("});
        edits.push_back({read.span.end, 0, ")"});
      }
    }
    if (!edits.empty()) {
      Tunable t{"R3_USE_LDG", "1", {"0", "1"}};
      const std::size_t reads = edits.size() / 2;
      edits.push_back({0, 0,
                       preamble({t},
                                "#if R3_USE_LDG\n#define R3_LDG(e) __ldg(&(e))\n#else\n#define "
                                "R3_LDG(e) (e)\n#endif\n")});
      offer({"ldg",
             "__ldg for " + std::to_string(reads) + " read(s) of const parameters",
             splice(source, edits),
             {t}});
    }
  }
  if (wanted("hoist_loads")) {
    for (const Loop& loop : facts.loops) {
      if (loop.hoistable.empty()) continue;
      const Load& load = loop.hoistable.front();
      bool guarded = true;  // unless the condition reads it too, which happens at least once
      Tunable t{fresh_name(source, "R3_HOIST_"), "1", {"0", "1"}};
      const std::string suffix = t.name.substr(std::string("R3_HOIST_").size());
      const std::string variable = "r3_hoisted_" + suffix, macro = "R3_HOISTED_" + suffix;
      std::vector<TextEdit> edits;
      for (const Load& same : loop.hoistable) {
        if (same.text != load.text) continue;
        edits.push_back({same.span.begin, same.span.end - same.span.begin, macro});
        guarded = guarded && same.needs_guard;
      }
      const std::string value = guarded ? "(" + *loop.guard + ") ? (" + load.text +
                                              ") : static_cast<" + load.type + ">(0)"
                                        : "(" + load.text + ")";
      const std::string indent = indentation(source, loop.span.begin);
      edits.push_back({loop.span.begin, 0,
                       "{ const " + load.type + " " + variable + " = " + value + ";\n#if " +
                           t.name + "\n#define " + macro + " " + variable + "\n#else\n#define " +
                           macro + " (" + load.text + ")\n#endif\n" + indent});
      edits.push_back({loop.span.end, 0, "\n#undef " + macro + "\n" + indent + "}"});
      edits.push_back({0, 0, preamble({t})});
      offer(
          {"hoist_loads",
           "load of " + load.text + " hoisted before the loop at line " + std::to_string(loop.line),
           splice(source, edits),
           {t}});
    }
  }
  if (wanted("parametrise")) {
    for (Mutation& m : parametrise(source, facts, context)) offer(std::move(m));
  }
  return report;
}

}  // namespace r3::compiler
