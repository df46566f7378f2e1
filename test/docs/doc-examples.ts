import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "../helpers/child-process.js";

/**
 * The ```ts blocks of README.md and docs/*.md, as modules the tests compile
 * and run (test/docs/examples.test.ts).
 *
 * - Every block is a module of its own. A guide's prose assumes things its
 *   blocks do not declare (your `conveyor`, your jobs, your mailer): the
 *   guide's context, test/docs/examples/<guide>.ts, declares them, and
 *   each block imports from it every name it does not declare itself.
 * - A block preceded by `<!-- example: NAME; … -->` is a named example: a
 *   complete module that a test runs against a real database. What it
 *   exports, other blocks may use by name (testing.md's blocks use
 *   durable-execution.md's `trial`).
 * - Every block's own top-level values are exported, so that the test that
 *   runs it can check what it promised (`result.value; // { upgraded: "pro" }`).
 */

export const EXAMPLES_DIR = resolve(REPO_ROOT, "test-artifacts", "doc-examples");
const CONTEXTS_DIR = resolve(REPO_ROOT, "test", "docs", "examples");
const MARKER = /<!--\s*example:\s*([a-z0-9-]+)\s*;[^>]*-->\s*$/;

export interface DocBlock {
  /** The markdown file, relative to the repository. */
  guide: string;
  /** The line of the block's first code line in the guide (1-based). */
  line: number;
  code: string;
  /** The named example's name, when the block is one. */
  name: string | undefined;
  /** The module it is compiled as, under EXAMPLES_DIR. */
  file: string;
}

export function docFiles(): string[] {
  const docs = readdirSync(resolve(REPO_ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => join("docs", name));
  return ["README.md", ...docs.sort()];
}

/** The ```ts blocks of one markdown file, in order. */
export function blocksOf(guide: string): DocBlock[] {
  const lines = readFileSync(resolve(REPO_ROOT, guide), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!/^```\S*/.test(lines[index]!)) continue;
    const fence = /^```(\S*)/.exec(lines[index]!)![1];
    const end = lines.findIndex((line, at) => at > index && line.startsWith("```"));
    if (fence === "ts") {
      const previous = lines.slice(0, index).reverse().find((line) => line.trim() !== "");
      const name = previous === undefined ? undefined : MARKER.exec(previous)?.[1];
      const stem = guide === "README.md" ? "readme" : basename(guide, ".md");
      const file = join(EXAMPLES_DIR, name ? `${name}.ts` : `${stem}-${blocks.length + 1}.ts`);
      blocks.push({ guide, line: index + 2, code: lines.slice(index + 1, end).join("\n"), name, file });
    }
    index = end;
  }
  return blocks;
}

/** The names a module declares at its top level (imports, values, functions, classes, types), and which of them it exports. */
function topLevelNames(code: string): { declared: Set<string>; values: Set<string>; exported: Set<string> } {
  const source = ts.createSourceFile("block.ts", code, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const declared = new Set<string>();
  const values = new Set<string>();
  const exported = new Set<string>();
  const isExported = (node: ts.Node) => ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const bind = (name: ts.BindingName, out: Set<string>[]) => {
    if (ts.isIdentifier(name)) for (const set of out) set.add(name.text);
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name, out);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && statement.importClause) {
      const clause = statement.importClause;
      if (clause.name) declared.add(clause.name.text);
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) declared.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) for (const element of bindings.elements) declared.add(element.name.text);
    } else if (ts.isVariableStatement(statement)) {
      const sets = isExported(statement) ? [declared, exported] : [declared, values];
      for (const declaration of statement.declarationList.declarations) bind(declaration.name, sets);
    } else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name) {
      declared.add(statement.name.text);
      (isExported(statement) ? exported : values).add(statement.name.text);
    } else if (ts.isExportDeclaration(statement) && !statement.isTypeOnly && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) if (!element.isTypeOnly) exported.add(element.name.text);
    } else if ((ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && statement.name) {
      declared.add(statement.name.text);
    }
  }
  return { declared, values, exported };
}

/** Import lines for `names` not in `except`, from `from`. */
function importLine(names: Iterable<string>, except: Set<string>, from: string): string {
  const wanted = [...names].filter((name) => !except.has(name));
  return wanted.length === 0 ? "" : `import { ${wanted.join(", ")} } from "${from}"; `;
}

const relativeImport = (fromFile: string, toFile: string) => {
  const path = relative(dirname(fromFile), toFile).replace(/\.ts$/, ".js");
  return path.startsWith(".") ? path : `./${path}`;
};

/**
 * Write every block as a module under EXAMPLES_DIR (emptied first): one
 * first line of imports (from the named examples, then the guide's
 * context), the block as written, and a last line exporting its values.
 * Returns the blocks and the contexts, for the compiler.
 */
export function writeExamples(): { blocks: DocBlock[]; contexts: string[] } {
  rmSync(EXAMPLES_DIR, { recursive: true, force: true });
  mkdirSync(EXAMPLES_DIR, { recursive: true });
  const blocks = docFiles().flatMap(blocksOf);
  const named = blocks.filter((block) => block.name !== undefined);
  const duplicate = named.find((block, index) => named.findIndex((other) => other.name === block.name) !== index);
  if (duplicate) throw new Error(`${duplicate.guide}:${duplicate.line}: a second example named ${duplicate.name}`);
  const exportsOf = new Map(named.map((block) => [block, topLevelNames(block.code).exported]));
  const contexts: string[] = [];
  for (const block of blocks) {
    const own = topLevelNames(block.code);
    const taken = new Set(own.declared);
    let header = "";
    for (const [example, names] of exportsOf) {
      if (example === block) continue;
      header += importLine(names, taken, relativeImport(block.file, example.file));
      for (const name of names) taken.add(name);
    }
    const context = join(CONTEXTS_DIR, `${block.guide === "README.md" ? "readme" : basename(block.guide, ".md")}.ts`);
    if (existsSync(context) && !context.endsWith(".d.ts")) {
      if (!contexts.includes(context)) contexts.push(context);
      header += importLine(topLevelNames(readFileSync(context, "utf8")).exported, taken, relativeImport(block.file, context));
    }
    const exported = [...own.values].filter((name) => !own.exported.has(name));
    writeFileSync(block.file, `${header}\n${block.code}\nexport { ${exported.join(", ")} };\n`);
  }
  return { blocks, contexts };
}

/** Declarations of packages the guides show that the repository does not install (test/docs/examples/*.d.ts). */
const ambient = () => readdirSync(CONTEXTS_DIR).filter((name) => name.endsWith(".d.ts")).map((name) => join(CONTEXTS_DIR, name));

/** Type-check the written blocks with the tests' compiler options; one line per error, at its place in the guide. */
export function typeErrors(blocks: DocBlock[], contexts: string[]): string[] {
  const configPath = resolve(REPO_ROOT, "test", "tsconfig.json");
  const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, ts.sys.readFile).config, ts.sys, dirname(configPath));
  // As a user's strict build compiles them: the tests' own noUncheckedIndexedAccess is stricter than most apps.
  const options = { ...config.options, noEmit: true, incremental: false, noUncheckedIndexedAccess: false };
  const program = ts.createProgram([...blocks.map((block) => block.file), ...contexts, ...ambient()], options);
  const byFile = new Map(blocks.map((block) => [block.file, block]));
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    const file = diagnostic.file;
    if (!file || diagnostic.start === undefined) return text;
    const { line } = file.getLineAndCharacterOfPosition(diagnostic.start);
    const block = byFile.get(resolve(file.fileName));
    // The block starts on the module's second line.
    return block ? `${block.guide}:${block.line + line - 1}: ${text}` : `${relative(REPO_ROOT, file.fileName)}:${line + 1}: ${text}`;
  });
}
