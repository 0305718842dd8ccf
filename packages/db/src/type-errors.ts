import { dirname, resolve } from "node:path";
import ts from "typescript";

/**
 * The TypeScript errors in `source`, compiled as if it were the file at `path` (inside the
 * repository, so its imports resolve as the real file's would) under the repository's
 * tsconfig.json: one line each, `<line>: TS<code>: <message>` (lines from 1). For tests that an invariant the types
 * hold still fails to compile when broken.
 */
export function typeErrorsIn(path: string, source: string): string[] {
  const file = resolve(path);
  const configFile = ts.findConfigFile(dirname(file), ts.sys.fileExists);
  if (!configFile) throw new Error(`no tsconfig.json above ${file}`);
  const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, dirname(configFile));
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (name) => resolve(name) === file || fileExists(name);
  host.readFile = (name) => (resolve(name) === file ? source : readFile(name));
  host.getSourceFile = (name, language, onError, fresh) =>
    resolve(name) === file
      ? ts.createSourceFile(name, source, language)
      : getSourceFile(name, language, onError, fresh);
  const program = ts.createProgram([file], options, host);
  const checked = program.getSourceFile(file);
  return ts.getPreEmitDiagnostics(program, checked).map((diagnostic) => {
    const line =
      diagnostic.file && diagnostic.start !== undefined
        ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1
        : 0;
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, " ");
    return `${line}: TS${diagnostic.code}: ${message}`;
  });
}
