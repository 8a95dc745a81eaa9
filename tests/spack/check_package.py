#!/usr/bin/env python3
"""Checks r3's Spack recipe (spack/packages/r3/package.py) against r3's CMake, without Spack.

    check_package.py REPO_ROOT

The recipe is parsed with `ast` (so it has to be valid Python) and never imported. What is
checked, one line printed per check:

  repo     spack/repo.yaml declares the namespace r3
  (e)      the recipe's class derives from CMakePackage and CudaPackage
  (a)      the options of cmake/R3Options.cmake and the variants match one to one: each
           R3_ENABLE_<X> is set by exactly one self.define_from_variant("R3_ENABLE_<X>", "<x>"),
           R3_BUILD_TESTS by the variant tests, BUILD_SHARED_LIBS by shared, cuda_arch reaches
           CMAKE_CUDA_ARCHITECTURES; no variant sets two options and every variant sets one
  (b)      every variant passed to define_from_variant is declared with variant() (cuda by
           CudaPackage)
  (c)      every option the recipe sets exists: define_from_variant only sets options that
           R3Options.cmake declares; self.define sets a CMAKE_* variable or the <Pkg>_DIR /
           <Pkg>_ROOT hint of a package the CMake looks for, never an R3_* option
  (d)      the recipe depends on every package the CMake looks for (find_package,
           pkg_check_modules, cmake_minimum_required) and on the issue's list, optional ones
           only under their variant (llvm under +llvm, ...)
  (f)      the version bounds are the CMake's: the minimum of find_package(<Pkg> <version>)
           is the lower bound of a depends_on of that package, and none allows less; an exact
           requirement (<Pkg>_VERSION_MAJOR EQUAL n) is an exact @n
  (g)      every conflicts() says why (msg=)
  (h)      the recipe has stand-alone tests (test_* methods, one of them running --version) and
           the capture they replay, share/r3/examples/smoke.h5, is installed by the build

Exit status 0 when every check passes, 1 when one fails (each failure says what to change), 2
on wrong usage or unreadable files. Python 3.8 or later, standard library only.
"""

import ast
import re
import sys
from pathlib import Path

RECIPE = Path("spack/packages/r3/package.py")
REPO_YAML = Path("spack/repo.yaml")
OPTIONS_FILE = Path("cmake/R3Options.cmake")
EXAMPLES_CMAKE = Path("examples/CMakeLists.txt")

REQUIRED_BASES = ("CMakePackage", "CudaPackage")

# Variants that the recipe's base classes declare.
INHERITED_VARIANTS = {
    "cuda": "CudaPackage",
    "cuda_arch": "CudaPackage",
    "build_type": "CMakePackage",
    "generator": "CMakePackage",
    "ipo": "CMakePackage",
}

# Options of R3Options.cmake that are not R3_ENABLE_<X>, and the variant that sets each.
OTHER_OPTIONS = {"R3_BUILD_TESTS": "tests", "BUILD_SHARED_LIBS": "shared"}

# The dependencies the recipe must have (the list) and the variant each one is under
# (None: always).
REQUIRED_DEPENDENCIES = {
    "cmake": None,
    "hdf5": None,
    "yaml-cpp": None,
    "xxhash": None,
    "cli11": None,
    "nlohmann-json": None,
    "eigen": None,
    "nlopt": None,
    "curl": None,
    "mpi": "mpi",
    "libseccomp": "seccomp",
    "cuda": "cuda",
    "llvm": "llvm",
    "kokkos": "kokkos",
    "zstd": "cuda",  # the CUDA recorder's PTX
    "googletest": "tests",
    "cpp-httplib": "tests",
}

# CMake packages that r3_require(...) does not name, and their Spack packages (None: nothing
# to depend on). A find_package of a package in neither place fails check (d) until it is
# added here or to an r3_require.
CMAKE_TO_SPACK = {
    "Threads": None,
    "Git": None,
    "PkgConfig": "pkgconfig",
    "MPI": "mpi",
    "CUDAToolkit": "cuda",
    "LLVM": "llvm",
    "Clang": "llvm",
    "Kokkos": "kokkos",
    "zstd": "zstd",
}
# pkg-config modules of pkg_check_modules(...) and their Spack packages.
PKG_CONFIG_TO_SPACK = {
    "libseccomp": "libseccomp",
    "libxxhash": "xxhash",
    "cpp-httplib": "cpp-httplib",
}


# --- reading the CMake -------------------------------------------------------------------------


def strip_cmake_comments(text):
    """The text with CMake line comments (# to the end of the line, outside strings) removed."""
    out = []
    in_string = False
    i = 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif c == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text))


class CMakeFacts:
    """What the recipe is checked against, read from the CMake files."""

    def __init__(self, root):
        options_text = strip_cmake_comments(read(root / OPTIONS_FILE))
        # name -> "tristate" / "bool"
        self.options = {}
        for name in re.findall(r"\br3_tristate_option\(\s*([A-Za-z_][A-Za-z0-9_]*)", options_text):
            self.options[name] = "tristate"
        for name in re.findall(r"(?<![A-Za-z0-9_])option\(\s*([A-Za-z_][A-Za-z0-9_]*)", options_text):
            self.options[name] = "bool"

        files = [root / "CMakeLists.txt"] + sorted((root / "cmake").glob("*.cmake"))
        texts = {f: strip_cmake_comments(read(f)) for f in files}
        everything = "\n".join(texts.values())

        # CMake package -> Spack package, from r3_require(<package> <debian> <spack>).
        self.spack_of = dict(CMAKE_TO_SPACK)
        for cmake_name, spack_name in re.findall(
            r"\br3_require\(\s*([A-Za-z0-9_.-]+)\s+(?:\"[^\"]*\"|\S+)\s+([A-Za-z0-9_.@+:-]+)\s*\)",
            everything,
        ):
            if cmake_name != "package":  # the macro's own definition
                self.spack_of[cmake_name] = spack_name

        # (cmake package, minimum version or None, file)
        self.find_packages = []
        for f, text in texts.items():
            for name, version in re.findall(
                r"\bfind_package\(\s*([A-Za-z0-9_.-]+)(?:\s+([0-9]+(?:\.[0-9]+)*))?", text
            ):
                self.find_packages.append((name, version or None, f.relative_to(root)))
        # (pkg-config module, minimum version or None, file)
        self.pkg_config_modules = []
        for f, text in texts.items():
            for args in re.findall(r"\bpkg_check_modules\(([^)]*)\)", text):
                words = args.split()[1:]  # drop the prefix
                for word in words:
                    if word in ("REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                                "NO_CMAKE_ENVIRONMENT_PATH"):
                        continue
                    m = re.fullmatch(r"([A-Za-z0-9_.+-]+?)(?:>=([0-9.]+))?", word)
                    if m:
                        self.pkg_config_modules.append((m.group(1), m.group(2), f.relative_to(root)))
        # cmake package -> exact major version (LLVM_VERSION_MAJOR EQUAL 16)
        self.exact_major = {
            name: major
            for name, major in re.findall(r"\b([A-Za-z0-9]+)_VERSION_MAJOR\s+EQUAL\s+([0-9]+)", everything)
        }
        m = re.search(r"\bcmake_minimum_required\(\s*VERSION\s+([0-9.]+)", texts[root / "CMakeLists.txt"])
        self.cmake_minimum = m.group(1) if m else None


# --- reading the recipe ------------------------------------------------------------------------


def literal_str(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def callee_name(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


class Recipe(ast.NodeVisitor):
    """The directives and option settings of the recipe class."""

    def __init__(self, class_node):
        self.class_node = class_node
        self.when_stack = []
        self.variants = {}  # name -> line
        self.mapped = []  # (option, variant, line) from define_from_variant
        self.defined = []  # (option, line) from self.define
        self.dependencies = []  # (spec string, condition string, line)
        self.conflicts = []  # (spec string, has msg, line)
        self.problems = []  # things the check cannot read, each a message
        self.test_methods = {}  # name -> FunctionDef
        self.mapping_calls = set()
        for node in ast.walk(class_node):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("define_from_variant", "define"):
                    self.mapping_calls.add(id(node.func))
        for stmt in class_node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test"):
                self.test_methods[stmt.name] = stmt
        self.visit(class_node)

    def visit_With(self, node):
        conditions = []
        for item in node.items:
            call = item.context_expr
            if isinstance(call, ast.Call) and callee_name(call.func) == "when" and call.args:
                text = literal_str(call.args[0])
                if text is None:
                    self.problems.append(f"line {node.lineno}: with when(...) of a non-literal spec")
                else:
                    conditions.append(text)
        self.when_stack.extend(conditions)
        self.generic_visit(node)
        if conditions:
            del self.when_stack[-len(conditions):]

    def visit_Attribute(self, node):
        if node.attr in ("define_from_variant", "define") and id(node) not in self.mapping_calls:
            self.problems.append(
                f"line {node.lineno}: self.{node.attr} is used other than by calling it directly "
                f"(e.g. aliased); write self.{node.attr}(\"OPTION\", ...) so that it can be checked"
            )
        self.generic_visit(node)

    def visit_Call(self, node):
        name = callee_name(node.func)
        is_method = isinstance(node.func, ast.Attribute)
        if name == "variant" and not is_method:
            self._variant(node)
        elif name == "depends_on" and not is_method:
            self._depends_on(node)
        elif name == "conflicts" and not is_method:
            self._conflicts(node)
        elif name == "define_from_variant" and is_method:
            self._define_from_variant(node)
        elif name == "define" and is_method:
            self._define(node)
        self.generic_visit(node)

    def _variant(self, node):
        text = literal_str(node.args[0]) if node.args else None
        if text is None:
            self.problems.append(f"line {node.lineno}: variant() without a literal name")
        else:
            self.variants[text] = node.lineno

    def _depends_on(self, node):
        spec = literal_str(node.args[0]) if node.args else None
        if spec is None:
            self.problems.append(f"line {node.lineno}: depends_on() without a literal spec")
            return
        conditions = list(self.when_stack)
        when = keyword(node, "when")
        if when is not None:
            text = literal_str(when)
            if text is None:
                self.problems.append(f"line {node.lineno}: depends_on({spec!r}) with a non-literal when=")
            else:
                conditions.append(text)
        self.dependencies.append((spec, " ".join(conditions), node.lineno))

    def _conflicts(self, node):
        spec = literal_str(node.args[0]) if node.args else None
        msg = keyword(node, "msg")
        has_msg = msg is not None and (literal_str(msg) is None or literal_str(msg).strip() != "")
        if spec is None and node.args:
            # conflicts(f"...") in a loop: keep it, by its source line
            spec = f"<expression at line {node.lineno}>"
        self.conflicts.append((spec, has_msg, node.lineno))

    def _define_from_variant(self, node):
        option = literal_str(node.args[0]) if node.args else None
        if option is None:
            self.problems.append(f"line {node.lineno}: define_from_variant() without a literal option")
            return
        if len(node.args) > 1:
            variant = literal_str(node.args[1])
            if variant is None:
                self.problems.append(f"line {node.lineno}: define_from_variant({option!r}, ...) "
                                     "with a non-literal variant")
                return
        elif keyword(node, "variant") is not None:
            variant = literal_str(keyword(node, "variant"))
        else:
            variant = option.lower()  # Spack's default
        self.mapped.append((option, variant, node.lineno))

    def _define(self, node):
        option = literal_str(node.args[0]) if node.args else None
        if option is None:
            self.problems.append(f"line {node.lineno}: self.define() without a literal variable name")
            return
        self.defined.append((option, node.lineno))


def dependency_name(spec):
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9_.-]*)", spec)
    return m.group(1) if m else ""


def dependency_version(spec):
    """The version constraint of the spec's root (the text after @), or None."""
    m = re.match(r"\s*[A-Za-z0-9][A-Za-z0-9_.-]*\s*@\s*([^\s+~%^]+)", spec)
    return m.group(1) if m else None


# --- the checks --------------------------------------------------------------------------------


class Report:
    def __init__(self):
        self.failures = 0
        self.count = 0

    def ok(self, label, text):
        self.count += 1
        print(f"ok    {label:6} {text}")

    def fail(self, label, text):
        self.count += 1
        self.failures += 1
        print(f"FAIL  {label:6} {text}")

    def check(self, label, passed, ok_text, fail_text):
        if passed:
            self.ok(label, ok_text)
        else:
            self.fail(label, fail_text)


def read(path):
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"check_package.py: cannot read {path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)


def find_recipe_class(tree):
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for node in classes:
        if any(callee_name(b) in REQUIRED_BASES for b in node.bases):
            return node
    return classes[0] if classes else None


def check_repo_yaml(root, report):
    text = read(root / REPO_YAML)
    namespace = re.search(r"^\s*namespace:\s*['\"]?([A-Za-z0-9_.]+)['\"]?\s*$", text, re.M)
    report.check(
        "repo",
        namespace is not None and namespace.group(1) == "r3",
        f"{REPO_YAML}: namespace r3",
        f"{REPO_YAML}: expected 'namespace: r3' under 'repo:', found "
        f"{namespace.group(1) if namespace else 'no namespace'}",
    )


def check_bases(cls, report):
    bases = [callee_name(b) for b in cls.bases]
    missing = [b for b in REQUIRED_BASES if b not in bases]
    report.check(
        "(e)",
        not missing,
        f"class {cls.name}({', '.join(bases)})",
        f"class {cls.name}({', '.join(bases)}) does not derive from {', '.join(missing)}",
    )


def check_options(cmake, recipe, report):
    # (a) the declared options, each set by exactly one define_from_variant of its variant
    expected = {}
    for option in cmake.options:
        if option.startswith("R3_ENABLE_"):
            expected[option] = option[len("R3_ENABLE_"):].lower()
        elif option in OTHER_OPTIONS:
            expected[option] = OTHER_OPTIONS[option]
        else:
            report.fail("(a)", f"{option}: declared in {OPTIONS_FILE} but the recipe has no variant "
                               "for it (add one, map it with define_from_variant and add it to "
                               "OTHER_OPTIONS in tests/spack/check_package.py)")
    for option, variant in OTHER_OPTIONS.items():
        if option not in cmake.options:
            report.fail("(c)", f"{option}: expected in {OPTIONS_FILE} (as the option of the "
                               f"variant {variant}) but not declared there")
    for option, variant in expected.items():
        uses = [(v, line) for o, v, line in recipe.mapped if o == option]
        if not uses:
            report.fail("(a)", f"{option} ({cmake.options[option]}): no define_from_variant sets it; "
                               f"add self.define_from_variant(\"{option}\", \"{variant}\")")
        elif len(uses) > 1:
            lines = ", ".join(str(line) for _, line in uses)
            report.fail("(a)", f"{option}: set by {len(uses)} define_from_variant calls (lines {lines}); "
                               "keep exactly one")
        elif uses[0][0] != variant:
            report.fail("(a)", f"{option}: set from the variant '{uses[0][0]}' (line {uses[0][1]}); "
                               f"expected '{variant}'")
        else:
            report.ok("(a)", f"{option} ({cmake.options[option]}) <- variant {variant} (line {uses[0][1]})")
    if any(option == "CMAKE_CUDA_ARCHITECTURES" for option, _ in recipe.defined):
        report.ok("(a)", "CMAKE_CUDA_ARCHITECTURES <- cuda_arch")
    else:
        report.fail("(a)", "cuda_arch does not reach CMake: "
                           "self.define(\"CMAKE_CUDA_ARCHITECTURES\", ...) is missing")

    # ...and vice versa: each variant sets one option, each recipe variant sets one
    by_variant = {}
    for option, variant, line in recipe.mapped:
        by_variant.setdefault(variant, []).append((option, line))
    for variant, uses in sorted(by_variant.items()):
        if len(uses) > 1:
            options = ", ".join(f"{o} (line {line})" for o, line in uses)
            report.fail("(a)", f"variant {variant} sets {len(uses)} options: {options}; keep one")
    unmapped = [v for v in recipe.variants if v not in by_variant]
    report.check(
        "(a)",
        not unmapped,
        f"every variant of the recipe sets an option ({', '.join(sorted(recipe.variants))})",
        f"variants that set no CMake option: {', '.join(sorted(unmapped))} (line "
        f"{', '.join(str(recipe.variants[v]) for v in sorted(unmapped))}); map each with "
        "define_from_variant or remove it",
    )

    # (b) every variant passed to define_from_variant is declared
    for option, variant, line in recipe.mapped:
        if variant in recipe.variants:
            report.ok("(b)", f"variant {variant} is declared (line {recipe.variants[variant]})")
        elif variant in INHERITED_VARIANTS:
            report.ok("(b)", f"variant {variant} is declared by {INHERITED_VARIANTS[variant]}")
        else:
            report.fail("(b)", f"define_from_variant(\"{option}\", \"{variant}\") at line {line}: "
                               f"no variant(\"{variant}\") in the recipe")

    # (c) every option the recipe sets exists
    for option, variant, line in recipe.mapped:
        if option not in cmake.options:
            report.fail("(c)", f"{option} (line {line}, from variant {variant}) is not an option of "
                               f"{OPTIONS_FILE} (renamed or removed there?)")
    looked_for = {name for name, _, _ in cmake.find_packages}
    for option, line in recipe.defined:
        hint = re.fullmatch(r"(.+)_(DIR|ROOT)", option)
        if option.startswith("R3_") or option in cmake.options:
            report.fail("(c)", f"self.define(\"{option}\") at line {line}: r3's options are set only "
                               "with define_from_variant, from their variant")
        elif option.startswith("CMAKE_"):
            report.ok("(c)", f"{option} (line {line}) is a CMake variable")
        elif hint and hint.group(1) in looked_for:
            report.ok("(c)", f"{option} (line {line}) locates find_package({hint.group(1)})")
        else:
            report.fail("(c)", f"self.define(\"{option}\") at line {line}: neither an option of "
                               f"{OPTIONS_FILE}, a CMAKE_* variable nor the _DIR/_ROOT of a "
                               "package the CMake looks for")
    if not [o for o, _, _ in recipe.mapped if o not in cmake.options]:
        report.ok("(c)", f"every option set by define_from_variant is declared in {OPTIONS_FILE}")


def check_dependencies(cmake, recipe, report):
    by_name = {}
    for spec, condition, line in recipe.dependencies:
        by_name.setdefault(dependency_name(spec), []).append((spec, condition, line))

    # What the CMake looks for, as Spack packages, with their minimum versions.
    wanted = {}  # spack name -> (minimum version or None, exact, where)
    for cmake_name, version, where in cmake.find_packages:
        if cmake_name not in cmake.spack_of:
            report.fail("(d)", f"find_package({cmake_name}) in {where}: unknown to this check; name its "
                               "Spack package in an r3_require(...) or in CMAKE_TO_SPACK of "
                               "tests/spack/check_package.py")
            continue
        spack_name = cmake.spack_of[cmake_name]
        if spack_name is None:
            continue
        spack_name = dependency_name(spack_name)
        exact = cmake.exact_major.get(cmake_name)
        minimum = exact or version
        previous = wanted.get(spack_name)
        if previous is None or (minimum and (previous[0] is None
                                             or version_tuple(minimum) > version_tuple(previous[0]))):
            wanted[spack_name] = (minimum, bool(exact), f"find_package({cmake_name}) in {where}")
    for module, version, where in cmake.pkg_config_modules:
        if module not in PKG_CONFIG_TO_SPACK:
            report.fail("(d)", f"pkg_check_modules(... {module}) in {where}: unknown to this check; add "
                               "it to PKG_CONFIG_TO_SPACK of tests/spack/check_package.py")
            continue
        spack_name = PKG_CONFIG_TO_SPACK[module]
        previous = wanted.get(spack_name)
        if previous is None or previous[0] is None and version:
            wanted[spack_name] = (version, False, f"pkg_check_modules({module}) in {where}")
    if cmake.cmake_minimum:
        wanted["cmake"] = (cmake.cmake_minimum, False, "cmake_minimum_required in CMakeLists.txt")

    # (d) present, and optional ones only under their variant
    names = sorted(set(REQUIRED_DEPENDENCIES) | set(wanted))
    for name in names:
        deps = by_name.get(name, [])
        why = wanted[name][2] if name in wanted else "the issue's list"
        if not deps:
            report.fail("(d)", f"no depends_on(\"{name}...\") ({why})")
            continue
        variant = REQUIRED_DEPENDENCIES.get(name)
        if variant is None:
            unconditional = [d for d in deps if not d[1]]
            report.check("(d)", bool(unconditional),
                         f"{name}: always ({why})",
                         f"{name}: every depends_on has a condition ({deps[0][1]}) but r3 always "
                         f"needs it ({why})")
        else:
            loose = [d for d in deps if not re.search(r"\+" + re.escape(variant) + r"\b", d[1])]
            report.check("(d)", not loose,
                         f"{name}: under +{variant} ({why})",
                         f"{name}: depends_on at line {loose[0][2] if loose else 0} is not under "
                         f"+{variant} (when='{loose[0][1] if loose else ''}'); r3~{variant} does "
                         "not use it")

    # (f) the version bounds are CMake's
    for name, (minimum, exact, where) in sorted(wanted.items()):
        deps = by_name.get(name, [])
        if not deps or minimum is None:
            continue
        constraints = [(dependency_version(spec), line) for spec, _, line in deps]
        if exact:
            matching = [c for c in constraints if c[0] == minimum]
            report.check("(f)", bool(matching),
                         f"{name}@{minimum} (exactly, as {where})",
                         f"{name}: CMake requires exactly {minimum} ({where}); no depends_on "
                         f"says @{minimum} (found: {', '.join('@' + c if c else 'no version' for c, _ in constraints)})")
            continue
        too_low = []
        matching = False
        for constraint, line in constraints:
            if constraint is None:
                continue
            lower = constraint.split(":")[0].split(",")[0]
            if not lower:
                too_low.append((constraint, line))
            elif version_tuple(lower) < version_tuple(minimum):
                too_low.append((constraint, line))
            elif version_tuple(lower) == version_tuple(minimum) and constraint.endswith(":"):
                matching = True
        if too_low:
            constraint, line = too_low[0]
            report.fail("(f)", f"{name}@{constraint} (line {line}) allows less than {minimum}, the "
                               f"minimum of {where}")
        else:
            report.check("(f)", matching,
                         f"{name}@{minimum}: (as {where})",
                         f"{name}: no depends_on(\"{name}@{minimum}:\") ({where} asks for "
                         f">= {minimum}; found: "
                         f"{', '.join('@' + c if c else 'no version' for c, _ in constraints)})")


def check_conflicts(recipe, report):
    without = [(spec, line) for spec, has_msg, line in recipe.conflicts if not has_msg]
    report.check(
        "(g)",
        not without,
        f"{len(recipe.conflicts)} conflicts, each with msg= "
        f"({', '.join(spec for spec, _, _ in recipe.conflicts)})",
        "conflicts without msg=: " + ", ".join(f"{spec} (line {line})" for spec, line in without),
    )


def check_smoke_tests(root, recipe, source, report):
    tests = sorted(n for n in recipe.test_methods if n.startswith("test_"))
    runs_version = any(
        isinstance(node, ast.Constant) and node.value == "--version"
        for name in tests
        for node in ast.walk(recipe.test_methods[name])
    )
    report.check(
        "(h)",
        bool(tests) and runs_version,
        f"stand-alone tests: {', '.join(tests)}",
        "the recipe needs stand-alone tests (methods test_*), one of them running r3 --version "
        f"(found: {', '.join(tests) or 'none'})",
    )
    if "smoke.h5" in source:
        examples = strip_cmake_comments(read(root / EXAMPLES_CMAKE))
        installed = "smoke.h5" in examples and re.search(
            r"install\(FILES[^)]*DESTINATION\s+\"?\$\{CMAKE_INSTALL_DATADIR\}/r3/examples", examples)
        report.check(
            "(h)",
            bool(installed),
            f"share/r3/examples/smoke.h5, which the tests replay, is installed by {EXAMPLES_CMAKE}",
            f"the tests use share/r3/examples/smoke.h5 but {EXAMPLES_CMAKE} does not install it",
        )


def main(argv):
    if len(argv) != 2:
        print("usage: check_package.py REPO_ROOT", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    source = read(root / RECIPE)
    print(f"checking {RECIPE} against {OPTIONS_FILE} and the CMake in {root}")
    report = Report()
    try:
        tree = ast.parse(source, filename=str(root / RECIPE))
    except SyntaxError as e:
        report.fail("parse", f"{RECIPE}:{e.lineno}: {e.msg}")
        print(f"{report.failures} of {report.count} checks failed")
        return 1
    report.ok("parse", f"{RECIPE} is valid Python")
    check_repo_yaml(root, report)

    cls = find_recipe_class(tree)
    if cls is None:
        report.fail("(e)", f"{RECIPE} defines no class")
        print(f"{report.failures} of {report.count} checks failed")
        return 1
    check_bases(cls, report)

    cmake = CMakeFacts(root)
    recipe = Recipe(cls)
    for problem in recipe.problems:
        report.fail("read", problem)
    check_options(cmake, recipe, report)
    check_dependencies(cmake, recipe, report)
    check_conflicts(recipe, report)
    check_smoke_tests(root, recipe, source, report)

    if report.failures:
        print(f"{report.failures} of {report.count} checks failed")
        return 1
    print(f"all {report.count} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
