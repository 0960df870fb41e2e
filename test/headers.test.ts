/**
 * Every module under src/ opens with a short contract header (docs/architecture.md, CONVENTIONS): a leading comment of
 * at most MAX_HEADER_LINES lines that names no issue number. History and issue numbers belong in git messages, figures
 * in bench/README.md. Files still over the limit are listed in OVER_LIMIT with their current length, which they may
 * not exceed; the list must only shrink.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

const MAX_HEADER_LINES = 10;

/**
 * Files whose header is still longer than MAX_HEADER_LINES, with the length each may not exceed. This list must only
 * shrink: lower a number when a header shrinks, remove an entry when it fits (the test says so), never add one.
 */
const OVER_LIMIT: Readonly<Record<string, number>> = {};

/** Files whose header may still name an issue number (same rule: only shrinks). */
const ISSUE_NUMBER_ALLOWED: ReadonlySet<string> = new Set<string>();

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The leading comment of a file (after a shebang): one block comment, or a run of `//` lines; [] when there is none. */
function headerOf(text: string): string[] {
  const lines = text.split('\n');
  let i = lines[0]?.startsWith('#!') ? 1 : 0;
  while (i < lines.length && lines[i]!.trim() === '') i++;
  const first = lines[i]?.trimStart() ?? '';
  if (first.startsWith('/*')) {
    let j = i;
    while (j < lines.length && !lines[j]!.includes('*/')) j++;
    return lines.slice(i, j + 1);
  }
  let j = i;
  while (j < lines.length && lines[j]!.trimStart().startsWith('//')) j++;
  return lines.slice(i, j);
}

/** "issue 11", "issue #11", "Issue 4, item 2": an issue number in a header. */
const ISSUE_NUMBER = /\bissues?\s*#?\d/i;

const headers = files(SRC)
  .map((abs) => ({ file: relative(SRC, abs).split('\\').join('/'), header: headerOf(readFileSync(abs, 'utf8')) }))
  .sort((a, b) => a.file.localeCompare(b.file));

describe('module headers', () => {
  it('finds the modules', () => {
    expect(headers.length).toBeGreaterThan(100);
  });

  it('every module under src/ opens with a comment', () => {
    expect(headers.filter((h) => h.header.length === 0).map((h) => h.file)).toEqual([]);
  });

  it(`every header has at most ${MAX_HEADER_LINES} lines (or, for a file in OVER_LIMIT, no more than listed there)`, () => {
    const over = headers
      .filter((h) => h.header.length > (OVER_LIMIT[h.file] ?? MAX_HEADER_LINES))
      .map(
        (h) =>
          `src/${h.file}: header of ${h.header.length} lines, at most ${OVER_LIMIT[h.file] ?? MAX_HEADER_LINES} allowed: state the contract, move history to git and figures to bench/README.md`,
      );
    expect(over).toEqual([]);
  });

  it('OVER_LIMIT only shrinks: every entry names a file whose header is still over the limit and exactly as long as listed', () => {
    const byFile = new Map(headers.map((h) => [h.file, h.header.length]));
    const stale = Object.entries(OVER_LIMIT).flatMap(([file, max]) => {
      const n = byFile.get(file);
      if (n === undefined) return [`${file}: no such file any more: remove it from OVER_LIMIT`];
      if (n <= MAX_HEADER_LINES) return [`${file}: header fits now (${n} lines): remove it from OVER_LIMIT`];
      if (n < max) return [`${file}: header shrank to ${n} lines: lower its OVER_LIMIT entry to ${n}`];
      return [];
    });
    expect(stale).toEqual([]);
  });

  it('no header names an issue number (history belongs in git messages)', () => {
    const named = headers
      .filter((h) => !ISSUE_NUMBER_ALLOWED.has(h.file))
      .flatMap((h) =>
        h.header.flatMap((line, i) => (ISSUE_NUMBER.test(line) ? [`src/${h.file}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(named).toEqual([]);
    const stale = [...ISSUE_NUMBER_ALLOWED].filter(
      (file) => !headers.some((h) => h.file === file && h.header.some((l) => ISSUE_NUMBER.test(l))),
    );
    expect(stale, 'ISSUE_NUMBER_ALLOWED entries whose header no longer names an issue: remove them').toEqual([]);
  });

  it('the header rules catch what they are meant to', () => {
    expect(headerOf('#!/usr/bin/env node\n/**\n * a\n * b\n */\nexport {};\n')).toHaveLength(4);
    expect(headerOf('// a\n// b\nexport {};\n')).toHaveLength(2);
    expect(headerOf('export const x = 1;\n')).toHaveLength(0);
    expect(ISSUE_NUMBER.test(' * (issue 11, item 2)')).toBe(true);
    expect(ISSUE_NUMBER.test(' * see issue #247')).toBe(true);
    expect(ISSUE_NUMBER.test(' * an issue with the modem, 3 tries')).toBe(false);
  });
});
