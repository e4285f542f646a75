// Prompt extension's wording: what the image reader saw is added only where the prompt says nothing.
import { describe, expect, test } from "bun:test";
import { extendPrompt, type ImageAttributes, namesObject, type PromptWording } from "../../src/models/prompt-extension.ts";

const WORDING: PromptWording = {
  colors: ["red", "orange", "yellow", "green", "cyan", "blue", "purple", "pink", "white", "gray", "black"],
  shapes: ["circle", "square", "triangle", "ring", "star"],
  solidBackground: "on {} background",
  specialBackgrounds: { night: "in a night sky", snow: "in the snow", sunset: "at sunset" },
};

const seen = (color: string, shape: string, background: string, count = "one", probability = 0.9): ImageAttributes => ({
  color: { label: color, probability },
  shape: { label: shape, probability },
  background: { label: background, probability },
  count: { label: count, probability },
});

describe("extendPrompt", () => {
  test("a motion alone gets the object before it and the background after it", () => {
    expect(extendPrompt("moving right", seen("red", "circle", "blue"), WORDING)).toBe("a red circle moving right on a blue background");
    expect(extendPrompt("growing", seen("orange", "star", "night"), WORDING)).toBe("an orange star growing in a night sky");
    expect(extendPrompt("", seen("white", "ring", "orange"), WORDING)).toBe("a white ring on an orange background");
  });

  test("what the prompt names stays as the user wrote it", () => {
    const red = seen("red", "circle", "blue");
    expect(extendPrompt("a blue square moving left on a black background", red, WORDING)).toBe("a blue square moving left on a black background");
    expect(extendPrompt("a green circle moving up", red, WORDING)).toBe("a green circle moving up on a blue background");
    expect(extendPrompt("moving down in the snow", red, WORDING)).toBe("a red circle moving down in the snow");
    expect(extendPrompt("a small green circle spinning", red, WORDING)).toBe("a small green circle spinning on a blue background");
  });

  test("a shape without a color gets the image's color, the article made to fit", () => {
    const orange = seen("orange", "square", "white");
    expect(extendPrompt("a square moving left", orange, WORDING)).toBe("an orange square moving left on a white background");
    expect(extendPrompt("A Square bouncing on a black background", orange, WORDING)).toBe("an orange Square bouncing on a black background");
    expect(extendPrompt("a small star growing", orange, WORDING)).toBe("a small orange star growing on a white background");
  });

  test("two objects get no object words; an unsure reading adds nothing", () => {
    expect(extendPrompt("moving right", seen("red", "circle", "blue", "two"), WORDING)).toBe("moving right on a blue background");
    expect(extendPrompt("moving right", seen("red", "circle", "blue", "one", 0.3), WORDING)).toBe("moving right");
    const unsureShape = { ...seen("red", "circle", "blue"), shape: { label: "circle", probability: 0.4 } };
    expect(extendPrompt("moving right", unsureShape, WORDING)).toBe("moving right on a blue background");
    expect(extendPrompt("a ring moving right", unsureShape, WORDING)).toBe("a red ring moving right on a blue background");
  });
});

describe("namesObject", () => {
  test("a shape word with its color names the object; a motion, a bare shape or a color alone does not", () => {
    expect(namesObject("a red circle moving right on a blue background", WORDING)).toBe(true);
    expect(namesObject("A Small Orange Star growing", WORDING)).toBe(true);
    expect(namesObject("moving right on a blue background", WORDING)).toBe(false);
    expect(namesObject("a square moving left", WORDING)).toBe(false);
    expect(namesObject("something red moving right", WORDING)).toBe(false);
    expect(namesObject("", WORDING)).toBe(false);
  });

  test("whatever extendPrompt makes of a motion and a trusted one-object reading names the object", () => {
    for (const prompt of ["moving right", "a star spinning", "growing in the snow"]) {
      const extended = extendPrompt(prompt, seen("purple", "triangle", "white"), WORDING);
      expect({ extended, names: namesObject(extended, WORDING) }).toEqual({ extended, names: true });
    }
    expect(namesObject(extendPrompt("moving right", seen("red", "circle", "blue", "two"), WORDING), WORDING)).toBe(false);
  });
});
