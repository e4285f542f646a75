// Prompt extension from a given image: what a prompt leaves unsaid about the image, said in the
// model's own caption phrases. Wan's pipelines do this with a vision-language model that rewrites the
// prompt from the input image (`--use_prompt_extend`); kino-tiny's reader is a classifier over its
// closed world (image-attributes.ts), and this file words what it read.
//
// The user's words always win: an attribute is added only where the prompt names none — an object
// phrase ("a red circle") before a prompt with no shape word, a color before a shape word that has
// none, a background phrase after a prompt with no background word. A frame read as holding two
// objects gets no object words (which object would they describe?), only its background.

/** What the image reader saw, each with the probability it gave its choice. */
export interface ImageAttributes {
  color: Reading;
  shape: Reading;
  background: Reading;
  /** Objects in the frame: 1 or 2. */
  count: Reading;
}

export interface Reading {
  label: string;
  probability: number;
}

/** The vocabulary the reader chooses from and how its attributes are worded (its config.json). */
export interface PromptWording {
  colors: readonly string[];
  shapes: readonly string[];
  /** Backgrounds that are solid colors use `solidBackground` ("on {} background", {} = "a red"). */
  solidBackground: string;
  /** The other backgrounds' phrases ("night" → "in a night sky"). */
  specialBackgrounds: Readonly<Record<string, string>>;
}

/** Below this probability a reading is not trusted enough to put words in the user's mouth. */
export const MIN_PROBABILITY = 0.5;

/** Words that say a prompt already sets the scene's background. */
const BACKGROUND_WORDS = new Set(["background", "sky", "night", "snow", "snowy", "sunset"]);
/** Words that may stand between a color and its shape ("a red small circle" is not a caption, "a small red circle" is). */
const SIZE_WORDS = new Set(["small", "big", "large"]);

export function article(word: string): string {
  return /^[aeiou]/.test(word) ? "an" : "a";
}

/** The phrase a caption sets a background with: "on a blue background", "in a night sky". */
export function backgroundPhrase(background: string, wording: PromptWording): string {
  return wording.specialBackgrounds[background] ?? wording.solidBackground.replace("{}", `${article(background)} ${background}`);
}

/** The prompt with what the image shows and it does not say; the same string when it says it all. */
export function extendPrompt(prompt: string, seen: ImageAttributes, wording: PromptWording): string {
  const trusted = (r: Reading) => r.probability >= MIN_PROBABILITY;
  const words = prompt.toLowerCase().match(/[a-z]+/g) ?? [];
  let out = prompt.trim();
  const oneObject = trusted(seen.count) && seen.count.label === "one";
  if (oneObject && trusted(seen.color)) {
    const shapeAt = words.findIndex((w) => wording.shapes.includes(w));
    if (shapeAt < 0 && trusted(seen.shape)) {
      out = [`${article(seen.color.label)} ${seen.color.label} ${seen.shape.label}`, out].filter(Boolean).join(" ");
    } else if (shapeAt >= 0 && !colored(words, shapeAt, wording)) {
      out = withColorBefore(out, words[shapeAt]!, seen.color.label);
    }
  }
  if (trusted(seen.background) && !words.some((w) => BACKGROUND_WORDS.has(w))) {
    out = [out, backgroundPhrase(seen.background.label, wording)].filter(Boolean).join(" ");
  }
  return out;
}

/** Whether the prompt names an object with its color ("a red circle", "a small blue star"): then
 *  extendPrompt adds no object words, and there is nothing about the object left for an image to say. */
export function namesObject(prompt: string, wording: PromptWording): boolean {
  const words = prompt.toLowerCase().match(/[a-z]+/g) ?? [];
  return words.some((w, at) => wording.shapes.includes(w) && colored(words, at, wording));
}

/** Whether the shape word at `at` has a color word before it (size words may stand between). */
function colored(words: string[], at: number, wording: PromptWording): boolean {
  let i = at - 1;
  while (i >= 0 && SIZE_WORDS.has(words[i]!)) i--;
  return i >= 0 && wording.colors.includes(words[i]!);
}

/** `text` with `color` put before the first `shape` word, and an "a"/"an" right before it made to fit. */
function withColorBefore(text: string, shape: string, color: string): string {
  const at = new RegExp(`\\b((a|an)\\s+)?(${shape})\\b`, "i");
  return text.replace(at, (_m, art: string | undefined, _a, word: string) => `${art ? `${article(color)} ` : ""}${color} ${word}`);
}
