#include "r3/compiler/extract.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "frontend.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"

namespace r3::compiler {
namespace {

// What the preprocessor saw of the macros of the file and its own (non-system) headers.
struct MacroFacts {
  struct Definition {
    std::string text;  // "#define NAME ..." as written
    clang::SourceLocation location;
    bool system = false;  // from a system header or the compiler's own predefined macros
    unsigned order = 0;
    std::vector<std::string> identifiers;  // in its body, for macros that use macros
  };
  std::map<std::string, Definition> defined;
  std::vector<std::pair<std::string, clang::SourceLocation>> uses;  // where each use is written
};

// The offset of the start of the line holding `offset`.
std::size_t line_start(llvm::StringRef buffer, std::size_t offset) {
  while (offset > 0 && buffer[offset - 1] != '\n') --offset;
  return offset;
}

class MacroRecorder : public clang::PPCallbacks {
 public:
  MacroRecorder(clang::SourceManager& sm, const clang::LangOptions& lang, MacroFacts& facts)
      : sm_(sm), lang_(lang), facts_(facts) {}

  void MacroDefined(const clang::Token& name, const clang::MacroDirective* directive) override {
    const clang::SourceLocation at = name.getLocation();
    if (!at.isFileID() || sm_.getFileID(at).isInvalid()) return;
    if (sm_.isWrittenInCommandLineFile(at)) return;  // -D: the unit's compile gets them too
    const clang::MacroInfo* info = directive->getMacroInfo();
    auto [file, offset] = sm_.getDecomposedLoc(at);
    bool invalid = false;
    llvm::StringRef buffer = sm_.getBufferData(file, &invalid);
    if (invalid) return;
    const std::size_t begin = line_start(buffer, offset);
    clang::SourceLocation end =
        clang::Lexer::getLocForEndOfToken(info->getDefinitionEndLoc(), 0, sm_, lang_);
    std::size_t stop = end.isValid() && sm_.getFileID(end) == file ? sm_.getFileOffset(end)
                                                                    : offset + name.getLength();
    MacroFacts::Definition d;
    d.text = buffer.substr(begin, stop - begin).str();
    d.location = at;
    d.system = sm_.isInSystemHeader(at) || sm_.isWrittenInBuiltinFile(at);
    if (d.system && !sm_.isWrittenInBuiltinFile(at)) {
      // The CUDA toolkit's and Clang's CUDA headers: NVRTC and Clang have their own.
      auto entry = sm_.getFileEntryRefForID(file);
      const std::string path = entry ? entry->getName().str() : "";
      const std::string toolkit = cuda_toolkit().string();
      if ((!toolkit.empty() && path.rfind(toolkit, 0) == 0) ||
          path.find("/include/__clang_cuda") != std::string::npos ||
          path.find("/cuda_wrappers/") != std::string::npos)
        return;
    }
    d.order = order_++;
    for (const clang::Token& token : info->tokens())
      if (const clang::IdentifierInfo* id = token.getIdentifierInfo())
        d.identifiers.push_back(id->getName().str());
    facts_.defined[name.getIdentifierInfo()->getName().str()] = std::move(d);
  }
  void MacroExpands(const clang::Token& name, const clang::MacroDefinition&,
                    clang::SourceRange range, const clang::MacroArgs*) override {
    use(name, range.getBegin());
  }
  void Ifdef(clang::SourceLocation at, const clang::Token& name,
             const clang::MacroDefinition&) override {
    use(name, at);
  }
  void Ifndef(clang::SourceLocation at, const clang::Token& name,
              const clang::MacroDefinition&) override {
    use(name, at);
  }
  void Defined(const clang::Token& name, const clang::MacroDefinition&,
               clang::SourceRange range) override {
    use(name, range.getBegin());
  }

 private:
  void use(const clang::Token& name, clang::SourceLocation at) {
    if (const clang::IdentifierInfo* id = name.getIdentifierInfo())
      facts_.uses.push_back({id->getName().str(), sm_.getFileLoc(at)});
  }
  clang::SourceManager& sm_;
  const clang::LangOptions& lang_;
  MacroFacts& facts_;
  unsigned order_ = 0;
};

// Declarations a declaration refers to (calls, variables, types, templates, enumerators).
class Uses : public clang::RecursiveASTVisitor<Uses> {
 public:
  explicit Uses(std::vector<const clang::Decl*>& out) : out_(out) {}
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool shouldVisitImplicitCode() const { return false; }

  bool VisitDeclRefExpr(clang::DeclRefExpr* e) {
    out_.push_back(e->getDecl());
    return true;
  }
  bool VisitMemberExpr(clang::MemberExpr* e) {
    out_.push_back(e->getMemberDecl());
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr* e) {
    out_.push_back(e->getConstructor());
    return true;
  }
  bool VisitOverloadExpr(clang::OverloadExpr* e) {  // calls in templates, not yet resolved
    for (const clang::NamedDecl* d : e->decls()) out_.push_back(d);
    return true;
  }
  bool TraverseNestedNameSpecifierLoc(clang::NestedNameSpecifierLoc location) {
    for (auto l = location; l; l = l.getPrefix()) {
      if (const clang::NestedNameSpecifier* n = l.getNestedNameSpecifier())
        if (const clang::NamespaceAliasDecl* alias = n->getAsNamespaceAlias()) out_.push_back(alias);
    }
    return RecursiveASTVisitor::TraverseNestedNameSpecifierLoc(location);
  }
  bool VisitTypeLoc(clang::TypeLoc location) {
    add_type(location.getType());
    return true;
  }
  bool VisitTemplateSpecializationTypeLoc(clang::TemplateSpecializationTypeLoc location) {
    if (const clang::TemplateDecl* t =
            location.getTypePtr()->getTemplateName().getAsTemplateDecl())
      out_.push_back(t);
    return true;
  }

 private:
  void add_type(clang::QualType type) {
    for (int depth = 0; depth < 16 && !type.isNull(); ++depth) {
      if (const auto* t = type->getAs<clang::TypedefType>()) out_.push_back(t->getDecl());
      if (const clang::TagDecl* tag = type->getAsTagDecl()) out_.push_back(tag);
      if (type->isPointerType() || type->isReferenceType()) {
        type = type->getPointeeType();
      } else if (type->isArrayType()) {
        type = type->castAsArrayTypeUnsafe()->getElementType();
      } else {
        break;
      }
    }
  }
  std::vector<const clang::Decl*>& out_;
};

// The declaration to copy for a use: the namespace-level declaration (or template) holding it;
// null for what needs no copy (parameters, locals, members found through their record).
const clang::Decl* top_level(const clang::Decl* d) {
  for (int depth = 0; d != nullptr && depth < 32; ++depth) {
    if (llvm::isa<clang::ParmVarDecl>(d) || llvm::isa<clang::TemplateTypeParmDecl>(d) ||
        llvm::isa<clang::NonTypeTemplateParmDecl>(d))
      return nullptr;
    if (const auto* e = llvm::dyn_cast<clang::EnumConstantDecl>(d)) {
      d = llvm::cast<clang::Decl>(e->getDeclContext());
      continue;
    }
    if (const auto* f = llvm::dyn_cast<clang::FunctionDecl>(d)) {
      if (const clang::FunctionDecl* pattern = f->getTemplateInstantiationPattern(); pattern && pattern != f) {
        d = pattern;
        continue;
      }
      if (const clang::FunctionTemplateDecl* t = f->getDescribedFunctionTemplate()) d = t;
    }
    if (const auto* s = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(d)) {
      if (!s->isExplicitSpecialization()) {
        d = s->getSpecializedTemplate();
        continue;
      }
    }
    if (const auto* r = llvm::dyn_cast<clang::CXXRecordDecl>(d)) {
      if (const clang::CXXRecordDecl* pattern = r->getTemplateInstantiationPattern(); pattern && pattern != r) {
        d = pattern;
        continue;
      }
      if (const clang::ClassTemplateDecl* t = r->getDescribedClassTemplate()) d = t;
    }
    if (const auto* v = llvm::dyn_cast<clang::VarDecl>(d)) {
      if (!v->hasGlobalStorage() || v->isStaticLocal()) return nullptr;
    }
    const clang::DeclContext* context = d->getDeclContext();
    if (llvm::isa<clang::FunctionDecl>(context)) return nullptr;  // comes with its function
    if (const auto* record = llvm::dyn_cast<clang::RecordDecl>(context)) {
      d = record;  // members come with their record
      continue;
    }
    if (const auto* spec = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(context)) {
      d = spec;
      continue;
    }
    return d;
  }
  return d;
}

// "f32", "f64" or "f16" when every scalar of `type` (its members, bases and array elements, all
// the way down) is that one floating type; "" otherwise. A struct of floats is compared per
// component with the float tolerance instead of bit for bit.
std::string uniform_floating_type(const clang::ASTContext& context, clang::QualType type,
                                  int depth = 0) {
  if (depth > 16 || type.isNull() || type->isDependentType()) return "";
  type = type.getCanonicalType();
  if (const clang::ArrayType* array = context.getAsArrayType(type))
    return uniform_floating_type(context, array->getElementType(), depth + 1);
  if (const auto* builtin = type->getAs<clang::BuiltinType>()) {
    switch (builtin->getKind()) {
      case clang::BuiltinType::Float: return "f32";
      case clang::BuiltinType::Double: return "f64";
      case clang::BuiltinType::Half:
      case clang::BuiltinType::Float16: return "f16";
      default: return "";
    }
  }
  const clang::RecordDecl* record = type->getAsRecordDecl();
  if (record == nullptr || (record = record->getDefinition()) == nullptr || record->isUnion())
    return "";
  std::string common;
  auto agree = [&](const std::string& part) {
    if (part.empty() || (!common.empty() && part != common)) return false;
    common = part;
    return true;
  };
  if (const auto* cxx = llvm::dyn_cast<clang::CXXRecordDecl>(record)) {
    if (cxx->isDynamicClass()) return "";  // a vtable pointer among the members
    for (const clang::CXXBaseSpecifier& base : cxx->bases())
      if (!agree(uniform_floating_type(context, base.getType(), depth + 1))) return "";
  }
  for (const clang::FieldDecl* field : record->fields())
    if (field->isBitField() || !agree(uniform_floating_type(context, field->getType(), depth + 1)))
      return "";
  return common;
}

// Per parameter of `kernel`: the uniform floating type of what a pointer parameter points to
// when that is a struct ("" for scalars and pointers to scalars, whose type the recorder knows).
std::vector<std::string> pointee_struct_types(const clang::ASTContext& context,
                                              const clang::FunctionDecl& kernel) {
  std::vector<std::string> types;
  for (const clang::ParmVarDecl* p : kernel.parameters()) {
    const clang::QualType type = p->getType().getCanonicalType();
    const bool to_struct = type->isPointerType() && type->getPointeeType()->isRecordType();
    types.push_back(to_struct ? uniform_floating_type(context, type->getPointeeType()) : "");
  }
  return types;
}

struct Piece {
  clang::FileID file;
  std::size_t begin = 0, end = 0;
  clang::SourceLocation location;          // of its first character, for ordering
  std::vector<std::string> namespaces;     // enclosing namespaces, outermost first ("" anonymous)
};

std::vector<std::string> namespaces_of(const clang::Decl* d) {
  std::vector<std::string> out;
  for (const clang::DeclContext* c = d->getDeclContext(); c != nullptr; c = c->getParent()) {
    if (const auto* n = llvm::dyn_cast<clang::NamespaceDecl>(c)) out.push_back(n->getName().str());
  }
  std::reverse(out.begin(), out.end());
  return out;
}

class Extractor {
 public:
  Extractor(clang::ASTContext& context, const MacroFacts& macros, const ExtractOptions& options,
            ExtractedUnit& out)
      : context_(context), sm_(context.getSourceManager()), macros_(macros), options_(options),
        out_(out) {}

  void run() {
    const clang::FunctionDecl* kernel = find_kernel();
    if (kernel == nullptr) return;
    const clang::Decl* root = top_level(kernel);
    out_.is_template = llvm::isa<clang::FunctionTemplateDecl>(root);
    out_.kernel = kernel->getQualifiedNameAsString();
    out_.parameter_struct_types = pointee_struct_types(context_, *kernel);
    for (const clang::ParmVarDecl* p : kernel->parameters())
      out_.parameter_names.push_back(p->getNameAsString());
    std::vector<const clang::Decl*> work{root};
    std::set<const clang::Decl*> seen;
    while (!work.empty()) {
      const clang::Decl* d = top_level(work.back());
      work.pop_back();
      if (d == nullptr || !seen.insert(d->getCanonicalDecl()).second) continue;
      if (llvm::isa<clang::TranslationUnitDecl>(d) || llvm::isa<clang::NamespaceDecl>(d)) continue;
      const clang::SourceLocation at = sm_.getExpansionLoc(d->getLocation());
      if (at.isInvalid()) continue;
      if (sm_.isInSystemHeader(at)) {
        need_header(at);
        continue;
      }
      // Every declaration of it in the file and its headers: prototypes before their use,
      // out-of-line member definitions, the definition.
      for (const clang::Decl* r : d->redecls()) copy(r, work);
      if (const auto* record = llvm::dyn_cast<clang::CXXRecordDecl>(d)) copy_out_of_line(record, work);
      if (const auto* t = llvm::dyn_cast<clang::ClassTemplateDecl>(d))
        copy_out_of_line(t->getTemplatedDecl(), work);
    }
    emit();
  }

 private:
  const clang::FunctionDecl* find_kernel() {
    std::string wanted = options_.kernel;
    if (std::size_t angle = wanted.find('<'); angle != std::string::npos) wanted.resize(angle);
    const clang::FunctionDecl* found = nullptr;
    std::vector<std::string> kernels;
    std::function<void(const clang::DeclContext*)> visit = [&](const clang::DeclContext* dc) {
      for (const clang::Decl* d : dc->decls()) {
        if (const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
          visit(ns);
          continue;
        }
        const clang::FunctionDecl* f = llvm::dyn_cast<clang::FunctionDecl>(d);
        if (const auto* t = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) f = t->getTemplatedDecl();
        if (f == nullptr || !f->hasAttr<clang::CUDAGlobalAttr>()) continue;
        if (sm_.isInSystemHeader(sm_.getExpansionLoc(f->getLocation()))) continue;
        const std::string qualified = f->getQualifiedNameAsString();
        kernels.push_back(qualified);
        const bool match = qualified == wanted || f->getNameAsString() == wanted;
        if (!match) continue;
        // The definition, wherever the prototypes are.
        if (found == nullptr || (!found->isThisDeclarationADefinition() &&
                                 f->isThisDeclarationADefinition()))
          found = f;
      }
    };
    visit(context_.getTranslationUnitDecl());
    if (found == nullptr) {
      std::string list;
      for (const auto& k : kernels) list += (list.empty() ? "" : ", ") + k;
      out_.diagnostics += "r3 extract: " + options_.file.string() + " defines no kernel '" +
                          options_.kernel + "'" +
                          (list.empty() ? std::string(" (it defines no __global__ function)")
                                        : "; its kernels: " + list) +
                          "\n";
    }
    return found;
  }

  void copy(const clang::Decl* d, std::vector<const clang::Decl*>& work) {
    if (d->isImplicit()) return;
    clang::SourceRange range = d->getSourceRange();
    clang::SourceLocation begin = sm_.getExpansionLoc(range.getBegin());
    clang::SourceLocation end = sm_.getExpansionLoc(range.getEnd());
    if (begin.isInvalid() || end.isInvalid() || sm_.isInSystemHeader(begin)) return;
    end = clang::Lexer::getLocForEndOfToken(end, 0, sm_, context_.getLangOpts());
    auto [file, first] = sm_.getDecomposedLoc(begin);
    auto [end_file, last] = sm_.getDecomposedLoc(end);
    if (file != end_file || last < first) return;
    bool invalid = false;
    llvm::StringRef buffer = sm_.getBufferData(file, &invalid);
    if (invalid) return;
    // With the ';' that ends a declaration that is not a function body; whole lines where
    // nothing but white space or a // comment shares them with the declaration.
    std::size_t stop = last;
    while (stop < buffer.size() && (buffer[stop] == ' ' || buffer[stop] == '\t')) ++stop;
    if (stop < buffer.size() && buffer[stop] == ';') last = stop + 1;
    stop = last;
    while (stop < buffer.size() && (buffer[stop] == ' ' || buffer[stop] == '\t')) ++stop;
    if (stop >= buffer.size() || buffer[stop] == '\n' || buffer.substr(stop, 2) == "//") {
      while (stop < buffer.size() && buffer[stop] != '\n') ++stop;
      last = stop < buffer.size() ? stop + 1 : stop;
    }
    std::size_t start = line_start(buffer, first);
    if (buffer.substr(start, first - start).find_first_not_of(" \t") != llvm::StringRef::npos)
      start = first;
    Piece piece;
    piece.file = file;
    piece.begin = start;
    piece.end = last;
    piece.location = sm_.getComposedLoc(file, static_cast<unsigned>(piece.begin));
    piece.namespaces = namespaces_of(d);
    pieces_.push_back(piece);
    std::vector<const clang::Decl*> found;
    Uses(found).TraverseDecl(const_cast<clang::Decl*>(d));
    work.insert(work.end(), found.begin(), found.end());
  }

  void copy_out_of_line(const clang::CXXRecordDecl* record, std::vector<const clang::Decl*>& work) {
    if (record == nullptr || !record->hasDefinition()) return;
    for (const clang::Decl* member : record->getDefinition()->decls()) {
      const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(member);
      if (const auto* t = llvm::dyn_cast<clang::FunctionTemplateDecl>(member))
        method = llvm::dyn_cast<clang::CXXMethodDecl>(t->getTemplatedDecl());
      if (method == nullptr) continue;
      const clang::FunctionDecl* definition = method->getDefinition();
      if (definition && definition->isOutOfLine()) copy(definition, work);
    }
  }

  // A declaration from a system header: the CUDA toolkit header the file included for it.
  void need_header(clang::SourceLocation at) {
    const std::filesystem::path toolkit = cuda_toolkit();
    if (toolkit.empty()) return;
    clang::FileID file = sm_.getFileID(at);
    for (int depth = 0; depth < 64 && file.isValid(); ++depth) {
      clang::SourceLocation included_at = sm_.getIncludeLoc(file);
      if (included_at.isInvalid()) return;  // a header Clang itself includes first
      if (!sm_.isInSystemHeader(included_at)) {
        auto entry = sm_.getFileEntryRefForID(file);
        if (!entry) return;
        const std::string path = entry->getName().str();
        for (const std::filesystem::path& dir : {toolkit / "include" / "cccl", toolkit / "include"}) {
          const std::string prefix = dir.string() + "/";
          if (path.rfind(prefix, 0) == 0) {
            const std::string header = path.substr(prefix.size());
            if (std::find(out_.includes.begin(), out_.includes.end(), header) == out_.includes.end())
              out_.includes.push_back(header);
            return;
          }
        }
        return;  // a system header outside the toolkit (the C library): not for device code
      }
      file = sm_.getFileID(included_at);
    }
  }

  void emit() {
    std::sort(pieces_.begin(), pieces_.end(), [&](const Piece& a, const Piece& b) {
      if (a.file == b.file) return a.begin < b.begin;
      return sm_.isBeforeInTranslationUnit(a.location, b.location);
    });
    std::vector<Piece> merged;
    for (const Piece& p : pieces_) {
      if (!merged.empty() && merged.back().file == p.file && p.begin <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, p.end);
        continue;
      }
      merged.push_back(p);
    }
    // The macros used in the pieces (and by those macros), defined outside them.
    std::set<std::string> needed;
    std::vector<std::string> queue;
    auto inside = [&](clang::SourceLocation at) {
      if (at.isInvalid()) return false;
      auto [file, offset] = sm_.getDecomposedLoc(at);
      for (const Piece& p : merged)
        if (p.file == file && offset >= p.begin && offset < p.end) return true;
      return false;
    };
    for (const auto& [name, at] : macros_.uses) {
      if (macros_.defined.contains(name) && inside(at) && needed.insert(name).second)
        queue.push_back(name);
    }
    while (!queue.empty()) {
      const std::string name = queue.back();
      queue.pop_back();
      for (const std::string& id : macros_.defined.at(name).identifiers)
        if (macros_.defined.contains(id) && needed.insert(id).second) queue.push_back(id);
    }
    std::vector<const std::pair<const std::string, MacroFacts::Definition>*> definitions;
    for (const auto& entry : macros_.defined)
      if (needed.contains(entry.first) && !inside(entry.second.location)) definitions.push_back(&entry);
    // The C library's and compiler's first (guarded, no marker), then the application's, each
    // after a '#line' marker like every piece: an edit of one maps back to its definition.
    std::stable_sort(definitions.begin(), definitions.end(), [](const auto* a, const auto* b) {
      if (a->second.system != b->second.system) return a->second.system;
      return a->second.order < b->second.order;
    });

    std::ostringstream text;
    text << "// The device-only unit of kernel '" << out_.kernel << "', extracted by r3 from "
         << options_.file.filename().string() << ": what the kernel uses, copied as written.\n";
    for (const std::string& header : out_.includes) text << "#include <" << header << ">\n";
    for (const auto* d : definitions) {
      // A C library or compiler macro (INT_MAX, M_PI): NVRTC may have its own.
      if (d->second.system) {
        text << "#ifndef " << d->first << "\n" << d->second.text << "\n#endif\n";
      } else {
        const clang::FileID file = sm_.getFileID(d->second.location);
        ExtractedPiece piece;
        if (auto entry = sm_.getFileEntryRefForID(file)) piece.file = entry->getName().str();
        piece.first_line = sm_.getSpellingLineNumber(d->second.location);
        piece.begin = sm_.getFileOffset(d->second.location) -
                      (sm_.getSpellingColumnNumber(d->second.location) - 1);  // its line's start
        piece.end = piece.begin + d->second.text.size();
        text << "#line " << piece.first_line << " \"" << piece.file.string() << "\"\n"
             << d->second.text << "\n";
        out_.pieces.push_back(piece);
      }
      out_.macros.push_back(d->first);
    }
    std::vector<std::string> open;
    for (const Piece& p : merged) {
      std::size_t common = 0;
      while (common < open.size() && common < p.namespaces.size() &&
             open[common] == p.namespaces[common])
        ++common;
      for (std::size_t i = open.size(); i > common; --i)
        text << "}  // namespace " << open[i - 1] << " (r3 extract)\n";
      open.resize(common);
      for (std::size_t i = common; i < p.namespaces.size(); ++i) {
        text << "namespace " << p.namespaces[i] << (p.namespaces[i].empty() ? "" : " ")
             << "{  // (r3 extract)\n";
        open.push_back(p.namespaces[i]);
      }
      bool invalid = false;
      llvm::StringRef buffer = sm_.getBufferData(p.file, &invalid);
      if (invalid) continue;
      ExtractedPiece piece;
      if (auto entry = sm_.getFileEntryRefForID(p.file)) piece.file = entry->getName().str();
      piece.begin = p.begin;
      piece.end = p.end;
      piece.first_line = sm_.getLineNumber(p.file, static_cast<unsigned>(p.begin));
      text << "#line " << piece.first_line << " \"" << piece.file.string() << "\"\n";
      text << buffer.substr(p.begin, p.end - p.begin).str();
      if (p.end == p.begin || buffer[p.end - 1] != '\n') text << "\n";
      out_.pieces.push_back(piece);
    }
    for (std::size_t i = open.size(); i > 0; --i)
      text << "}  // namespace " << open[i - 1] << " (r3 extract)\n";
    out_.text = text.str();
    out_.ok = !out_.pieces.empty();
  }

  clang::ASTContext& context_;
  clang::SourceManager& sm_;
  const MacroFacts& macros_;
  const ExtractOptions& options_;
  ExtractedUnit& out_;
  std::vector<Piece> pieces_;
};

class ExtractAction : public clang::ASTFrontendAction {
 public:
  ExtractAction(const ExtractOptions& options, ExtractedUnit& out) : options_(options), out_(out) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& instance,
                                                        llvm::StringRef) override {
    instance.getPreprocessor().addPPCallbacks(std::make_unique<MacroRecorder>(
        instance.getSourceManager(), instance.getLangOpts(), macros_));
    struct Consumer : clang::ASTConsumer {
      ExtractAction* action = nullptr;
      void HandleTranslationUnit(clang::ASTContext& context) override {
        Extractor(context, action->macros_, action->options_, action->out_).run();
      }
    };
    auto consumer = std::make_unique<Consumer>();
    consumer->action = this;
    return consumer;
  }

 private:
  const ExtractOptions& options_;
  ExtractedUnit& out_;
  MacroFacts macros_;
};

std::string read_text(const std::filesystem::path& path) {
  return read_text_file(path, "source");
}

// A shell-like split of a compile command (quotes and backslashes as a shell reads them).
std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < command.size()) word += command[++i];
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(word);
  return out;
}

}  // namespace

ExtractedUnit extract_kernel(const ExtractOptions& options) {
  ExtractedUnit out;
  Source source;
  source.name = std::filesystem::absolute(options.file).string();
  source.text = read_text(options.file);
  source.defines = options.defines;
  source.include_dirs = options.include_dirs;
  source.flags = options.flags;
  // Host code may not compile here (an API the toolkit dropped, a host-only header): what
  // matters is the kernel's part, which the unit's own compile checks.
  source.flags.push_back("-ferror-limit=0");
  ExtractAction action(options, out);
  std::string diagnostics;
  run_frontend(source, Dialect::cuda, action, diagnostics, options.cuda_arch);
  out.diagnostics = diagnostics + out.diagnostics;
  return out;
}

CompileFlags flags_from_compile_commands(const std::filesystem::path& database,
                                         const std::filesystem::path& file) {
  std::filesystem::path path = database;
  if (std::filesystem::is_directory(path)) path /= "compile_commands.json";
  nlohmann::json entries = nlohmann::json::parse(read_text(path), nullptr, false);
  if (entries.is_discarded() || !entries.is_array())
    throw FormatError(path.string() + ": not a compile_commands.json (a JSON array of commands)");
  std::error_code ec;
  const std::filesystem::path wanted = std::filesystem::weakly_canonical(file, ec);
  for (const nlohmann::json& entry : entries) {
    if (!entry.is_object() || !entry.contains("file")) continue;
    const std::filesystem::path directory = entry.value("directory", std::string("."));
    std::filesystem::path entry_file = entry.at("file").get<std::string>();
    if (entry_file.is_relative()) entry_file = directory / entry_file;
    if (std::filesystem::weakly_canonical(entry_file, ec) != wanted) continue;
    std::vector<std::string> args;
    if (entry.contains("arguments"))
      args = entry.at("arguments").get<std::vector<std::string>>();
    else
      args = split_command(entry.value("command", std::string()));
    CompileFlags flags;
    auto absolute = [&](const std::string& dir) {
      std::filesystem::path p = dir;
      return p.is_relative() ? directory / p : p;
    };
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&](std::string_view option) -> std::optional<std::string> {
        if (a == option && i + 1 < args.size()) return args[++i];
        if (a.size() > option.size() && a.rfind(option, 0) == 0)
          return a.substr(option.size() + (a[option.size()] == '=' ? 1 : 0));
        return std::nullopt;
      };
      if (auto dir = value("-I")) {
        flags.include_dirs.push_back(absolute(*dir));
      } else if (auto sys = value("-isystem")) {
        flags.include_dirs.push_back(absolute(*sys));
      } else if (auto define = value("-D")) {
        const std::size_t eq = define->find('=');
        flags.defines[define->substr(0, eq)] = eq == std::string::npos ? "1" : define->substr(eq + 1);
      } else if (a.rfind("-std=", 0) == 0 || a.rfind("--std=", 0) == 0) {
        flags.flags.push_back("-std=" + a.substr(a.find('=') + 1));
      } else if (a == "-Xcompiler" || a == "--compiler-options" || a == "-Xptxas" || a == "-o" ||
                 a == "--output-file" || a == "-gencode" || a == "-x" || a == "-ccbin") {
        if (i + 1 < args.size()) flags.notes.push_back("left out: " + a + " " + args[i + 1]);
        ++i;
      } else if (a.rfind("-", 0) == 0) {
        // -arch, --gpu-architecture, -rdc, -O, -c, -g, ...: nothing the extraction needs.
        flags.notes.push_back("left out: " + a);
      }
    }
    return flags;
  }
  throw Error(path.string() + " has no command for " + file.string());
}

}  // namespace r3::compiler
