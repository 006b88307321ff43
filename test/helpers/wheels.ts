import { execFileSync } from 'node:child_process';

/** Writes a valid pure-Python wheel (METADATA, WHEEL, RECORD) with the standard library's zipfile. */
const BUILD_WHEEL = `
import base64, hashlib, sys, zipfile
out, name, version = sys.argv[1:4]
files = {
    f"{name}/__init__.py": "def similarity(a, b):\\n    return 1.0 if a.lower() == b.lower() else 0.0\\n",
}
info = f"{name}-{version}.dist-info"
files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n"
files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: evalgate-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
record = []
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(text.encode())}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = "\\n".join(record) + "\\n"
with zipfile.ZipFile(f"{out}/{name}-{version}-py3-none-any.whl", "w") as wheel:
    for path, text in files.items():
        wheel.writestr(path, text)
`;

/** A wheel `<name>-<version>-py3-none-any.whl` in `dir` whose module has `similarity(a, b)` (case-blind equality). */
export function buildWheel(dir: string, name: string, version: string): void {
  execFileSync('python3', ['-c', BUILD_WHEEL, dir, name, version]);
}
