#!/usr/bin/env node
// Lints Cypher statements with Neo4j's own Cypher front end (@neo4j-cypher/language-support).
//
// stdin:  a JSON array of Cypher statements (strings).
// stdout: a JSON array with, for each statement, a list of diagnostics:
//         {severity: "error"|"warning"|"information"|"hint", message, offsets: {start, end},
//          line, column}   (line and column are 1-based; offsets are 0-based character offsets)
//
// The catalogue of procedures and functions is the package's Neo4j catalogue (testData.mockSchema: the built-in
// procedures/functions of a Neo4j 5 server plus the APOC and GDS plugins). The plugins' entries (apoc.*, gds.*) are
// dropped because our Neo4j runs without plugins, so a statement calling one is an error; set
// CYPHER_LINT_PLUGINS=apoc,gds to keep them. (Dropping them also makes the linter about 2x faster: it serialises the
// whole catalogue for every statement.) Only the catalogue is used: no labels, relationship types or property keys
// are given, so the linter does not warn about labels/properties "not present in the database".
// Statements without a version prefix are analysed as `CYPHER 5` (dbSchema.defaultLanguage).
//
// Parameters are not declared, so every `$param` yields an error "Parameter $name is not defined." — callers drop
// those (tests/cypherlint.py: errors_of). Everything else with severity "error" is a real error.
//
// Exit status: 0 when the batch was linted (whatever the diagnostics), 2 on bad input.
import { lintCypherQuery, testData } from '@neo4j-cypher/language-support';

const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };

const PLUGINS = ['apoc', 'gds'];
const keptPlugins = new Set((process.env.CYPHER_LINT_PLUGINS || '').split(',').map((s) => s.trim()).filter(Boolean));
const droppedPrefixes = PLUGINS.filter((p) => !keptPlugins.has(p)).map((p) => p + '.');

function withoutPlugins(scoped) {
  const out = {};
  for (const [version, registry] of Object.entries(scoped)) {
    out[version] = Object.fromEntries(
      Object.entries(registry).filter(([name]) => !droppedPrefixes.some((prefix) => name.startsWith(prefix))),
    );
  }
  return out;
}

const dbSchema = {
  procedures: withoutPlugins(testData.mockSchema.procedures),
  functions: withoutPlugins(testData.mockSchema.functions),
  defaultLanguage: process.env.CYPHER_LINT_VERSION || 'CYPHER 5',
};

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

function convert(d) {
  return {
    severity: SEVERITY[d.severity] ?? String(d.severity),
    message: d.message,
    offsets: d.offsets,
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
  };
}

function lintOne(statement) {
  if (typeof statement !== 'string') {
    return [{ severity: 'error', message: `cypher_lint: statement is not a string: ${JSON.stringify(statement)}`, offsets: { start: 0, end: 0 }, line: 1, column: 1 }];
  }
  if (statement.trim() === '') {
    return [{ severity: 'error', message: 'cypher_lint: empty statement', offsets: { start: 0, end: 0 }, line: 1, column: 1 }];
  }
  try {
    const { diagnostics } = lintCypherQuery(statement, dbSchema, { consoleCommandsEnabled: false });
    return diagnostics.map(convert);
  } catch (err) {
    return [{ severity: 'error', message: `cypher_lint: linter crashed: ${err && err.stack ? err.stack : err}`, offsets: { start: 0, end: 0 }, line: 1, column: 1 }];
  }
}

const input = await readStdin();
let statements;
try {
  statements = JSON.parse(input);
} catch (err) {
  process.stderr.write(`cypher_lint: stdin is not JSON: ${err.message}\n`);
  process.exit(2);
}
if (!Array.isArray(statements)) {
  process.stderr.write('cypher_lint: stdin must be a JSON array of strings\n');
  process.exit(2);
}
process.stdout.write(JSON.stringify(statements.map(lintOne)));
process.stdout.write('\n');
