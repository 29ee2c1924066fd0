import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { MODEL_B } from '../../src/domain/models.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { bytesHandler, type ImageServer, startImageServer } from '../inputs/image-server.js';
import { parseSamples } from '../metrics/prometheus-text.js';
import { eventually } from '../helpers/waits.js';
import {
  startTokenedGatewayProcess,
  type TokenedGatewayProcess,
} from '../helpers/tokened-gateway-process.js';
import {
  type ConsoleBrowser,
  cspViolations,
  launchConsoleBrowser,
  PAGE_TIMEOUT_MS,
} from './browser.js';
import { buildConsole } from './built-console.js';
import {
  type Arrival,
  DROP_AND_PASTE_AN_IMAGE,
  drawBox,
  RECORD_ARRIVALS,
  screenshot,
  seedForFullGroup,
  signIn,
  usageRowOf,
} from './console-pages.js';

const PROMPT = 'A paper boat on a pond, in three moments';
const GROUP = 3;

/** A port nothing listens on: the failing channel's upstream refuses every connection. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Generation requests the gateway has answered, from its /metrics. */
async function generationsAnswered(gateway: TokenedGatewayProcess): Promise<number> {
  const response = await fetch(`${gateway.url}/metrics`, {
    headers: { authorization: gateway.adminAuthorization },
  });
  return parseSamples(await response.text())
    .filter((sample) => sample.name === 'imagegate_requests_total')
    .filter((sample) => (sample.labels.route ?? '').includes('generation'))
    .reduce((sum, sample) => sum + sample.value, 0);
}

/** A generation of model B by `authorization`, answered 200; its request id. */
async function generateOnce(baseUrl: string, authorization: string, prompt: string) {
  const answer = await fetch(`${baseUrl}/api/v1/services/aigc/multimodal-generation/generation`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL_B,
      input: { messages: [{ role: 'user', content: [{ text: prompt }] }] },
      parameters: { size: '768*768' },
    }),
  });
  assert.equal(answer.status, 200, await answer.clone().text());
  return ((await answer.json()) as { request_id: string }).request_id;
}

describe('the web console in Chromium', { timeout: 15 * 60_000 }, () => {
  let home: string;
  let gateway: TokenedGatewayProcess;
  let browser: ConsoleBrowser;
  let inputImage: string;
  /** Serves the images the playground adds by URL. */
  let images: ImageServer;
  const bearer = (authorization: string) => authorization.replace(/^Bearer /, '');

  before(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'imagegate-console-'));
    const configFile = path.join(home, 'gateway.yaml');
    await writeFile(
      configFile,
      [
        'channels:',
        '  - name: broken-upstream',
        '    type: dashscope',
        `    base_url: http://127.0.0.1:${await closedPort()}`,
        '    api_key: sk-console-test',
        '    models:',
        '      txt-image-2.0-pro: qwen-image-2.0-pro',
        '    priority: 0',
        '  - name: local',
        '    type: local',
        '    priority: 1',
      ].join('\n'),
    );
    inputImage = path.join(home, 'harbour.png');
    await sharp({
      create: { width: 1200, height: 800, channels: 3, background: { r: 40, g: 110, b: 160 } },
    })
      .png()
      .toFile(inputImage);
    images = await startImageServer();
    images.serve(
      '/lighthouse.png',
      bytesHandler(
        await sharp({
          create: { width: 900, height: 600, channels: 3, background: { r: 200, g: 90, b: 40 } },
        })
          .png()
          .toBuffer(),
        { contentType: 'image/png' },
      ),
    );
    images.serve('/page.html', bytesHandler(Buffer.from('<html></html>')));
    await buildConsole();
    gateway = await startTokenedGatewayProcess({
      IMAGEGATE_CONFIG: configFile,
      // The image server of the test listens on the loopback address.
      IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS: 'true',
      IMAGEGATE_LEDGER_FLUSH_MS: '50',
      // Tasks wait PENDING, so that one can be canceled from the page.
      IMAGEGATE_TASK_CONCURRENCY: '0',
    });
    browser = await launchConsoleBrowser();
  });
  after(async () => {
    await browser?.close();
    await gateway?.stop();
    await images?.close();
    await rm(home, { recursive: true, force: true });
  });

  it('serves its page under a CSP, index revalidated and hashed assets immutable', async () => {
    const index = await fetch(`${gateway.url}/console/`);
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    assert.match(index.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const html = await index.text();
    assert.doesNotMatch(html, /<script>|<style|style=/, 'no inline script or style');
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(`${gateway.url}${script}`);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  });

  it('signs in, generates a sequential group with a box drawn by mouse, images arriving one by one', async () => {
    const { page, messages } = await browser.newPage();
    await page.goto(`${gateway.url}/console/`);
    await screenshot(page, 'sign-in');
    await signIn(page, gateway.url, bearer(gateway.adminAuthorization));
    for (const title of ['Playground', 'Tasks', 'Usage', 'Channels', 'Tokens'])
      await page.getByRole('navigation').getByRole('link', { name: title }).waitFor();

    await page.getByLabel('Prompt').fill(PROMPT);
    await page.getByTestId('file-input').setInputFiles(inputImage);
    const canvas = page.getByTestId('box-canvas-0');
    await canvas.waitFor();
    const corners = await drawBox(page, canvas, page, [0.25, 0.25], [0.75, 0.75]);
    // The box is in the original image's pixels (1200x800), whatever size it is shown at.
    for (const [value, expected] of corners.map((value, at) => [value, [300, 200, 900, 600][at]]))
      assert.ok(Math.abs((value as number) - (expected as number)) <= 4, `${corners.join(',')}`);

    await page.getByLabel('Sequential (a group of images)').check();
    await page.getByLabel('n (at most, 1-12)').fill(String(GROUP));
    await page.getByLabel('Seed (empty: random)').fill(String(seedForFullGroup(PROMPT, GROUP)));
    await page.getByText('Ready: sequential').waitFor();
    // Every change of the gallery, with whether the request was still running then.
    await page.evaluate(RECORD_ARRIVALS);
    await page.getByRole('button', { name: 'Generate' }).click();
    await page.locator('[data-phase=done]').waitFor();
    const arrivals = (await page.evaluate('window.arrivals')) as Arrival[];
    const counts = arrivals.map((arrival) => arrival.images).filter((count) => count > 0);
    assert.equal(counts.at(-1), GROUP, JSON.stringify(arrivals));
    assert.ok(
      arrivals.some(
        (arrival) => arrival.images > 0 && arrival.images < GROUP && arrival.phase === 'running',
      ),
      `an image was shown while the group was still arriving: ${JSON.stringify(arrivals)}`,
    );
    const arrivedMs = await page
      .locator('[data-testid=gallery] li')
      .evaluateAll((items) => items.map((item) => Number(item.getAttribute('data-arrived-ms'))));
    assert.deepEqual(
      arrivedMs,
      [...arrivedMs].sort((a, b) => a - b),
      'shown in arrival order',
    );
    await page.getByTestId('usage').getByText(`image_count ${GROUP}`).waitFor();
    // The header left before the upstream's share was known; the ledger row tells it after.
    const split = page.getByTestId('recorded-timing');
    await split.waitFor();
    assert.match(
      (await split.textContent()) ?? '',
      /^gateway;dur=\d+, (queue;dur=\d+, )?upstream;dur=\d+(, storage;dur=\d+)? \(of \d+ ms in all\)$/,
    );
    await screenshot(page, 'playground');
    assert.deepEqual(cspViolations(messages), [], 'no CSP violation');
    await page.close();
  });

  it('takes input images by drop, by paste (a PNG with alpha, sent again as JPEG) and by URL, and boxes on the URL’s image', async () => {
    const { page, messages } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.authorization));
    await page.evaluate(DROP_AND_PASTE_AN_IMAGE);
    await page.getByTestId('box-canvas-1').waitFor();
    for (const index of [0, 1])
      await page
        .getByText(/640×480 px/)
        .nth(index)
        .waitFor();
    // A URL the gateway cannot load as an image is refused as a generation would refuse it.
    await page.getByLabel('Image URL').fill(`http://127.0.0.1:${images.port}/page.html`);
    await page.getByRole('button', { name: 'Add URL' }).click();
    await page
      .getByRole('alert')
      .getByText(/InvalidImage: image/)
      .waitFor();
    // An image by URL is shown from the gateway's preview of it, under the page's CSP.
    const url = `http://127.0.0.1:${images.port}/lighthouse.png`;
    await page.getByLabel('Image URL').fill(url);
    await page.getByRole('button', { name: 'Add URL' }).click();
    const canvas = page.getByTestId('box-canvas-2');
    await canvas.waitFor();
    await page.getByText(/900×600 px/).waitFor();
    // Two uploads and a URL make a valid image-to-image request: the validator says so.
    await page.getByText('Ready: image-to-image').waitFor();
    const third = page.locator('.image-item').nth(2);
    const corners = await drawBox(page, canvas, third, [0.1, 0.2], [0.5, 0.6]);
    await screenshot(page, 'input-images');
    // In the URL's image's own pixels (900x600), whatever size it is shown at.
    for (const [value, expected] of corners.map((value, at) => [value, [90, 120, 450, 360][at]]))
      assert.ok(Math.abs((value as number) - (expected as number)) <= 4, `${corners.join(',')}`);
    // curl names the uploads by their keys and the URL as it is; the SDK uploads a local file itself.
    await page.getByText('The same request as code').click();
    const code = page.locator('.snippets pre');
    await code.getByText('X-DashScope-OssResourceResolve: enable').waitFor();
    assert.equal((await code.textContent())?.match(/oss:\/\/uploads\//g)?.length, 2);
    assert.ok((await code.textContent())?.includes(url));
    await page.getByRole('tab', { name: 'Python (dashscope)' }).click();
    await code.getByText('file:///path/to/image.png').first().waitFor();
    assert.deepEqual(cspViolations(messages), [], 'no CSP violation');
    await page.close();
  });

  it('explains an invalid palette before sending, and spends no request on it', async () => {
    const { page } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.authorization));
    const before = await generationsAnswered(gateway);
    await page.getByLabel('Colour palette').check();
    await page.getByLabel('Colour 3 share').fill('29.00%');
    await page.getByTestId('palette-sum').getByText('Sum: 99.00% of 100.00%').waitFor();
    const explained = page.getByTestId('validation');
    await explained.getByText('parameters.color_palette').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Generate' }).isDisabled(), true);
    await screenshot(page, 'palette');
    assert.equal(await generationsAnswered(gateway), before, 'no generation request was sent');
    await page.getByLabel('Colour 3 share').fill('30.00%');
    await page.getByText('Ready: text-to-image').waitFor();
    await page.close();
  });

  it('submits a task from the playground and cancels it; the Tasks page shows it canceled', async () => {
    const { page } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.authorization));
    await page.getByLabel('Delivery').selectOption('task');
    await page.getByText('Ready: text-to-image').waitFor();
    await page.getByRole('button', { name: 'Generate' }).click();
    await page.getByTestId('task-status').getByText('PENDING').waitFor();
    await page.getByRole('button', { name: 'Cancel task' }).click();
    await page.locator('[data-phase=canceled]').waitFor();
    await page.getByRole('link', { name: 'Tasks' }).click();
    await page.getByTestId('tasks').getByText('CANCELED').first().waitFor();
    await screenshot(page, 'tasks');
    await page.close();
  });

  it('shows a failing channel on the Channels page, and the request on the Usage page', async () => {
    const requestId = await generateOnce(gateway.url, gateway.authorization, 'a quiet street');

    const { page } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.adminAuthorization));
    await page.getByRole('link', { name: 'Channels' }).click();
    const broken = page.locator('[data-channel=broken-upstream]');
    await broken
      .getByTestId('last-error')
      .getByText(/ECONNREFUSED|refused|connect/i)
      .waitFor();
    await screenshot(page, 'channels');

    await usageRowOf(page, requestId);
    await screenshot(page, 'usage');
    await page.close();
  });

  it('exports the Usage page as the CSV the gateway answers for the same query', async () => {
    const requestId = await generateOnce(gateway.url, gateway.authorization, 'a ledger to export');
    const { page } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.adminAuthorization));
    await usageRowOf(page, requestId);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'imagegate-usage.csv');
    const csv = await readFile(await download.path(), 'utf8');
    const [header, ...lines] = csv.trimEnd().split('\r\n');
    const columns = (header ?? '').split(',');
    assert.deepEqual(columns.slice(0, 3), ['time', 'request_id', 'token_id']);
    const line = lines.map((text) => text.split(',')).find((cells) => cells[1] === requestId);
    assert.ok(line, `the CSV holds ${requestId}:\n${csv}`);
    assert.equal(line[columns.indexOf('images_billed')], '1');
    const fromGateway = await fetch(`${gateway.url}/admin/usage?limit=1000&format=csv`, {
      headers: { authorization: gateway.adminAuthorization },
    });
    assert.equal(csv, await fromGateway.text(), "one CSV format: the gateway's");
    await page.close();
  });

  it('flags a row whose books do not balance, and lists only such rows when asked', async (t) => {
    // An upstream that reports 3 images and sends 2: reported is not received.
    const upstream = await startFakeDashScope();
    t.after(() => upstream.close());
    const configFile = path.join(home, 'unbalanced.yaml');
    await writeFile(
      configFile,
      [
        'channels:',
        '  - name: overreporting',
        '    type: dashscope',
        `    base_url: ${upstream.url}`,
        `    api_key: ${upstream.apiKey}`,
      ].join('\n'),
    );
    const books = await startTokenedGatewayProcess({
      IMAGEGATE_CONFIG: configFile,
      IMAGEGATE_LEDGER_FLUSH_MS: '50',
    });
    t.after(() => books.stop());
    const balanced = await generateOnce(books.url, books.authorization, 'a balanced request');
    upstream.script({ kind: 'succeed', images: 1, imageCount: 3 });
    const unbalanced = await generateOnce(books.url, books.authorization, 'an overreported one');

    const { page } = await browser.newPage();
    await signIn(page, books.url, bearer(books.adminAuthorization));
    const flagged = await usageRowOf(page, unbalanced);
    await flagged.getByText('reported ≠ received').waitFor();
    await usageRowOf(page, balanced);
    await page.getByLabel('Only rows whose books do not balance').check();
    await eventually(
      async () =>
        JSON.stringify(
          await page
            .locator('[data-testid=usage-rows] tbody tr')
            .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-request-id'))),
        ) === JSON.stringify([unbalanced]),
      PAGE_TIMEOUT_MS,
      'only the unbalanced row is listed',
    );
    await page.close();
  });

  it('creates a token on the Tokens page, shows it once, sets its rate limit and revokes it', async () => {
    const { page } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.adminAuthorization));
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByLabel('Name').fill('console-made');
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = (await page.getByTestId('new-token').textContent()) ?? '';
    const check = await fetch(`${gateway.url}/v1/models`, {
      headers: { authorization: `Bearer ${shown.trim()}` },
    });
    assert.equal(check.status, 200, 'the token shown works');
    await screenshot(page, 'tokens');
    const row = page.locator('tr', { has: page.getByRole('rowheader', { name: 'console-made' }) });
    await row.getByText('defaults').click();
    await row.getByLabel('rpm').fill('30');
    await row.getByRole('button', { name: 'Save limits' }).click();
    await row.getByText('rpm 30').waitFor();
    await page.getByRole('button', { name: 'Revoke console-made' }).click();
    await page.locator('tr.revoked').getByText('console-made').waitFor();
    await page.close();
  });

  it('renders the API reference at /docs from /openapi.json under the same CSP', async () => {
    const { page, messages } = await browser.newPage();
    const answer = await page.goto(`${gateway.url}/docs`);
    assert.match(
      (await answer?.allHeaders())?.['content-security-policy'] ?? '',
      /style-src 'self'/,
    );
    await page.getByRole('button', { name: /Authorize/ }).waitFor();
    await page.locator('.opblock-summary-path').first().waitFor();
    const paths = await page.locator('.opblock-summary-path').allTextContents();
    assert.ok(
      paths.some((shown) => shown.includes('multimodal-generation/generation')),
      `${paths}`,
    );
    assert.ok(
      paths.some((shown) => shown.includes('/v1/images/generations')),
      `${paths}`,
    );
    await screenshot(page, 'docs');
    assert.deepEqual(cspViolations(messages), [], 'no CSP violation');
    await page.close();
  });

  it('shows a non-admin token only its own pages', async () => {
    const { page } = await browser.newPage();
    await signIn(page, gateway.url, bearer(gateway.authorization));
    const links = await page.getByRole('navigation').getByRole('link').allTextContents();
    assert.deepEqual(links, ['Playground', 'Tasks', 'Usage', 'API reference']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    await page.close();
  });
});
