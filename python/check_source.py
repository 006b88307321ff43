"""Checks a code evaluator before it is stored: the source compiles and defines `evaluate`, and each
requirement is a valid specifier. Reads {"source": str, "requirements": [str]} on stdin, writes a JSON
list of problems on stdout. Standard library only (pip's vendored `packaging` when present)."""
import ast
import json
import re
import sys

# PEP 508 names with optional extras, version specifiers and markers; used when pip is absent.
_FALLBACK = re.compile(
    r"^\s*[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\s*(\[[A-Za-z0-9._,\s-]*\])?\s*"
    r"(\(?\s*(~=|==|!=|<=|>=|<|>|===)\s*[A-Za-z0-9.*+!_-]+(\s*,\s*(~=|==|!=|<=|>=|<|>|===)\s*[A-Za-z0-9.*+!_-]+)*\s*\)?)?"
    r"\s*(;.*)?$"
)


def requirement_error(text):
    try:
        from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
    except Exception:  # pragma: no cover - pip missing
        return None if _FALLBACK.match(text) else "not a valid requirement specifier"
    try:
        req = Requirement(text)
    except InvalidRequirement as e:
        return str(e).splitlines()[0]
    if req.url:
        return "direct URL requirements are not allowed; name a package from the configured index"
    return None


def defines_evaluate(tree):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "evaluate":
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "evaluate" for t in node.targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name) == "evaluate" for a in node.names
        ):
            return True
    return False


def main():
    payload = json.load(sys.stdin)
    problems = []
    source = payload.get("source")
    if isinstance(source, str):
        try:
            tree = ast.parse(source, "<source>")
            compile(tree, "<source>", "exec")
        except SyntaxError as e:
            line = e.lineno or 0
            problems.append({"loc": ["source"], "line": line, "msg": f"Python syntax error on line {line}: {e.msg}"})
        except ValueError as e:
            problems.append({"loc": ["source"], "line": 0, "msg": f"Python source is invalid: {e}"})
        except (RecursionError, MemoryError) as e:
            # The parser's and compiler's own limits (e.g. an expression of 200,000 terms): the source
            # cannot be compiled, so it is refused like any other that does not compile.
            why = "an expression is too long or nested too deeply" if isinstance(e, RecursionError) else "it is too large"
            problems.append(
                {"loc": ["source"], "line": 0, "msg": f"Python source is too complex to compile: {why}; simplify it"}
            )
        else:
            if not defines_evaluate(tree):
                problems.append(
                    {"loc": ["source"], "line": 0, "msg": "source must define evaluate(sample, ground_truth, baseline)"}
                )
    for i, text in enumerate(payload.get("requirements") or []):
        err = requirement_error(text)
        if err:
            problems.append({"loc": ["requirements", i], "msg": f"invalid requirement '{text}': {err}"})
    json.dump(problems, sys.stdout)


if __name__ == "__main__":
    main()
