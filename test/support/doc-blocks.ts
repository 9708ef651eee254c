/** The fenced code blocks of a docs page's section, for the tests that run a page's code as written. */

/** The text under the heading `heading` (any level, exact title) up to the next heading of that level or above. */
export function docSection(markdown: string, heading: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => /^#{2,4} /.test(line) && line.replace(/^#+ /, "") === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = (lines[start] as string).indexOf(" ");
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    const line = lines[end] as string;
    if (line.startsWith("```")) fenced = !fenced;
    if (!fenced && /^#{2,4} /.test(line) && line.indexOf(" ") <= level) break;
  }
  return lines.slice(start + 1, end).join("\n");
}

/** The fenced blocks of `language` in `text`, in order, without their fences; throws when there is none. */
export function fencedBlocks(text: string, language: string): string[] {
  const found = [...text.matchAll(/^```([a-z]*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === language)
    .map((m) => m[2] as string);
  if (found.length === 0) throw new Error(`no ${language} block`);
  return found;
}
