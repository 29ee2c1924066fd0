import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { hashText, mixHash } from '../../src/engine/local/seeded-random.js';
import { MODEL_A } from '../../src/domain/models.js';
import { eventually } from '../helpers/waits.js';
import { PAGE_TIMEOUT_MS } from './browser.js';

/**
 * Saves a screenshot for the README when IMAGEGATE_SCREENSHOTS=1, so that ordinary runs (CI)
 * never rewrite the committed pictures.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.IMAGEGATE_SCREENSHOTS !== '1') return;
  const directory = path.resolve('docs/images');
  await mkdir(directory, { recursive: true });
  await page.screenshot({ path: path.join(directory, `console-${name}.png`), fullPage: true });
}

/** Signs in on the console's first page with `token` and waits for the playground. */
export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Playground' }).waitFor();
}

/** Opens the Usage page and refreshes it until it lists `requestId`'s row, which it returns. */
export async function usageRowOf(page: Page, requestId: string) {
  await page.getByRole('navigation').getByRole('link', { name: 'Usage' }).click();
  const row = page.locator(`[data-request-id="${requestId}"]`);
  await eventually(
    async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      return (await row.count()) > 0;
    },
    PAGE_TIMEOUT_MS,
    `the usage page lists ${requestId}`,
    500,
  );
  return row;
}

/**
 * The first seed for which the local engine's sequential group of model A (with an input image,
 * so without thinking mode) has exactly `n` images: the engine decides the count from the prompt
 * and the seed (src/engine/local/render-plan.ts), as a model would.
 */
export function seedForFullGroup(prompt: string, n: number): number {
  for (let seed = 0; ; seed++) {
    const family = hashText(JSON.stringify([MODEL_A, prompt, seed, false]));
    if (1 + (mixHash(family, hashText('image count')) % n) === n) return seed;
  }
}

/** How many images the gallery showed, and whether the request was still running then. */
export interface Arrival {
  images: number;
  phase: string | undefined;
}

/**
 * Run in the page (as text: the tests are compiled without the DOM's types): records each change
 * of the gallery's image count into `window.arrivals`, with the request's phase at that moment.
 */
export const RECORD_ARRIVALS = `(() => {
  const seen = [];
  window.arrivals = seen;
  new MutationObserver(() => {
    const images = document.querySelectorAll('[data-testid=gallery] li').length;
    const phase = document.querySelector('[data-phase]')?.dataset.phase;
    if (seen.at(-1)?.images !== images) seen.push({ images, phase });
  }).observe(document.body, { subtree: true, childList: true, attributes: true });
})()`;

/**
 * Run in the page: a 640x480 picture drawn on a canvas, handed to the drop zone as a JPEG drop and
 * to the document as a PNG paste (a canvas's PNG has an alpha channel, as a pasted screenshot
 * has), as a file manager and the clipboard hand files over.
 */
export const DROP_AND_PASTE_AN_IMAGE = `(async () => {
  const canvas = document.createElement('canvas');
  canvas.width = 640;
  canvas.height = 480;
  const context = canvas.getContext('2d');
  context.fillStyle = '#c0392b';
  context.fillRect(0, 0, 640, 480);
  const handOver = async (name, type) => {
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, type));
    const transfer = new DataTransfer();
    transfer.items.add(new File([blob], name, { type }));
    return transfer;
  };
  const dropped = await handOver('dropped.jpg', 'image/jpeg');
  document.querySelector('.drop').dispatchEvent(
    new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: dropped }),
  );
  const pasted = await handOver('', 'image/png');
  document.dispatchEvent(
    new ClipboardEvent('paste', { bubbles: true, cancelable: true, clipboardData: pasted }),
  );
})()`;

/**
 * Drags the mouse over `canvas` from one point to another, each given as fractions of its width
 * and height, as a person draws a box; answers the box's corners from the fields in `item`, in
 * the image's own pixels.
 */
export async function drawBox(
  page: Page,
  canvas: Locator,
  item: Locator | Page,
  from: [number, number],
  to: [number, number],
): Promise<number[]> {
  await canvas.scrollIntoViewIfNeeded();
  const area = await canvas.boundingBox();
  if (area === null) throw new Error('the canvas is not shown');
  const at = (x: number, y: number): [number, number] => [
    area.x + area.width * x,
    area.y + area.height * y,
  ];
  await page.mouse.move(...at(...from));
  await page.mouse.down();
  await page.mouse.move(...at((from[0] + to[0]) / 2, (from[1] + to[1]) / 2), { steps: 5 });
  await page.mouse.move(...at(...to), { steps: 5 });
  await page.mouse.up();
  return Promise.all(
    ['x1', 'y1', 'x2', 'y2'].map(async (corner) =>
      Number(await item.getByLabel(corner, { exact: true }).inputValue()),
    ),
  );
}
