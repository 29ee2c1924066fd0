import { MODEL_A, MODEL_B, type ModelId } from '../../src/domain/models.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  bodyWithItems,
  imageItems,
  imageUrl,
  MODELS,
  modelName,
  type RejectedCase,
  rejectedOverHttp,
  withImages,
} from './validation-table.js';

// docs/api.md §2.4: model A takes 0-9 images, model B 0-3 (0 is text-to-image,
// 1-3 edit). The form of an image reference (docs/api.md §2.6): an http(s) URL or
// data:<image/...>;base64,<data>, or oss://<key> of an upload (§11.3); a bad URL is InvalidURL, a bad data URL is InvalidImage.
// Checks on the bytes themselves belong to the inputs stage, not here.

const CONTENT = 'input.messages[0].content';
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAcCBlCwAAAABJRU5ErkJggg==';

const MAX_IMAGES: Record<ModelId, number> = { [MODEL_A]: 9, [MODEL_B]: 3 };

/** The body with one prompt and, at content[1], an image item with this reference. */
const withReference = (model: ModelId, image: string) =>
  bodyWithItems(model, [{ text: 'make it blue' }, { image }]);

const urlSource = (index: number) => ({
  path: `${CONTENT}[${index + 1}].image`,
  source: { kind: 'url', url: imageUrl(index) } as const,
});

const accepted: AcceptedCase[] = [];
const rejected: RejectedCase[] = [];

for (const model of MODELS) {
  const m = modelName(model);
  const max = MAX_IMAGES[model];
  accepted.push(
    {
      name: `${m}: no image, as text-to-image`,
      body: withImages(model, 0),
      expect: { images: [], mode: 'text-to-image' },
    },
    {
      name: `${m}: one image, as image-to-image`,
      body: withImages(model, 1),
      expect: { images: [urlSource(0)], mode: 'image-to-image' },
    },
    {
      name: `${m}: ${max} images (the most it takes), in order`,
      body: withImages(model, max),
      expect: {
        images: Array.from({ length: max }, (_, index) => urlSource(index)),
        mode: 'image-to-image',
      },
    },
    {
      name: `${m}: an https URL with port, path and query`,
      body: withReference(model, 'https://cdn.example.com:8443/a/b.png?sig=abc&x=1'),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'url', url: 'https://cdn.example.com:8443/a/b.png?sig=abc&x=1' },
          },
        ],
      },
    },
    {
      name: `${m}: a plain http URL`,
      body: withReference(model, 'http://images.example.com/cat.jpg'),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'url', url: 'http://images.example.com/cat.jpg' },
          },
        ],
      },
    },
    {
      name: `${m}: a URL normalized (host lower-cased, space escaped)`,
      body: withReference(model, 'HTTPS://Images.Example.COM/a cat.png'),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'url', url: 'https://images.example.com/a%20cat.png' },
          },
        ],
      },
    },
    {
      name: `${m}: a data URL of image/png, its base64 kept undecoded`,
      body: withReference(model, `data:image/png;base64,${PNG_BASE64}`),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'data', declaredMime: 'image/png', base64: PNG_BASE64 },
          },
        ],
      },
    },
    {
      name: `${m}: a data URL with an upper-case scheme, as schemes are case-insensitive`,
      body: withReference(model, 'DATA:image/png;BASE64,/9j/4AAQ'),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'data', declaredMime: 'image/png', base64: '/9j/4AAQ' },
          },
        ],
      },
    },
    {
      name: `${m}: a data URL of image/JPEG, the MIME type lower-cased`,
      body: withReference(model, 'data:image/JPEG;base64,/9j/4AAQ'),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'data', declaredMime: 'image/jpeg', base64: '/9j/4AAQ' },
          },
        ],
      },
    },
    {
      name: `${m}: an oss:// key of an upload, kept as written for the inputs stage`,
      body: withReference(model, 'oss://uploads/1768140000.abc/cat photo.png'),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'oss', key: 'uploads/1768140000.abc/cat photo.png' },
          },
        ],
      },
    },
    {
      name: `${m}: data URLs of image/webp and image/bmp beside a URL`,
      body: bodyWithItems(model, [
        { image: 'data:image/webp;base64,UklGRg==' },
        { text: 'merge' },
        { image: 'data:image/bmp;base64,Qk0=' },
      ]),
      expect: {
        images: [
          {
            path: `${CONTENT}[0].image`,
            source: { kind: 'data', declaredMime: 'image/webp', base64: 'UklGRg==' },
          },
          {
            path: `${CONTENT}[2].image`,
            source: { kind: 'data', declaredMime: 'image/bmp', base64: 'Qk0=' },
          },
        ],
      },
    },
  );

  rejected.push(
    {
      name: `${m}: ${max + 1} images, one more than it takes`,
      body: withImages(model, max + 1),
      path: CONTENT,
      problem: new RegExp(`takes at most ${max} images, got ${max + 1}$`),
    },
    {
      name: `${m}: 12 images`,
      body: bodyWithItems(model, [...imageItems(12), { text: 'merge' }]),
      path: CONTENT,
      problem: new RegExp(`takes at most ${max} images, got 12$`),
    },
    {
      name: `${m}: an ftp URL`,
      body: withReference(model, 'ftp://images.example.com/cat.png'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /scheme ftp is not allowed/,
    },
    {
      name: `${m}: an oss:// URL without a key`,
      body: withReference(model, 'oss://'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /must be oss:\/\/<key>/,
    },
    {
      name: `${m}: a file URL`,
      body: withReference(model, 'file:///etc/passwd'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /scheme file is not allowed/,
    },
    {
      name: `${m}: a javascript URL`,
      body: withReference(model, 'javascript:alert(1)'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
    },
    {
      name: `${m}: garbage text`,
      body: withReference(model, 'not a url at all'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /must be an http\(s\) URL, an oss:\/\/<key> of an upload or a data:/,
    },
    {
      name: `${m}: a host and path without a scheme`,
      body: withReference(model, 'images.example.com/cat.png'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
    },
    {
      name: `${m}: a scheme without a host`,
      body: withReference(model, 'https://'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
    },
    {
      name: `${m}: a URL with user and password`,
      body: withReference(model, 'https://alice:s3cret@images.example.com/cat.png'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /credentials/,
    },
    {
      name: `${m}: a URL with a user name only`,
      body: withReference(model, 'http://alice@images.example.com/cat.png'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /credentials/,
    },
    {
      name: `${m}: a URL longer than 8192 characters`,
      body: withReference(model, `https://images.example.com/${'a'.repeat(8200)}.png`),
      path: `${CONTENT}[1].image`,
      code: 'InvalidURL',
      problem: /longer than 8192/,
    },
    {
      name: `${m}: a bad URL in the second image item, named by its index`,
      body: bodyWithItems(model, [
        { text: 'merge' },
        { image: imageUrl(0) },
        { image: 'ftp://x.example/b.png' },
      ]),
      path: `${CONTENT}[2].image`,
      code: 'InvalidURL',
    },
    {
      name: `${m}: an empty image string`,
      body: withReference(model, ''),
      path: `${CONTENT}[1].image`,
      problem: /^must not be empty$/,
    },
    {
      name: `${m}: a data URL without the comma`,
      body: withReference(model, `data:image/png;base64${PNG_BASE64}`),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /must be of the form data:<MIME_type>;base64,<base64_data>/,
    },
    {
      name: `${m}: a data URL that is not base64`,
      body: withReference(model, 'data:image/png,rawbytes'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /must be of the form/,
    },
    {
      name: `${m}: a data URL without a MIME type`,
      body: withReference(model, `data:;base64,${PNG_BASE64}`),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /must be of the form/,
    },
    {
      name: `${m}: a data URL with a MIME type lacking its subtype`,
      body: withReference(model, `data:image;base64,${PNG_BASE64}`),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /must be of the form/,
    },
    {
      name: `${m}: a data URL with a MIME parameter before base64`,
      body: withReference(model, `data:image/png;charset=utf-8;base64,${PNG_BASE64}`),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /must be of the form/,
    },
    {
      name: `${m}: a data URL with nothing after base64,`,
      body: withReference(model, 'data:image/png;base64,'),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /base64 data is empty/,
    },
    {
      name: `${m}: a data URL of text/plain`,
      body: withReference(model, 'data:text/plain;base64,aGVsbG8='),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /MIME type text\/plain, which is not an image/,
    },
    {
      name: `${m}: a data URL of application/pdf`,
      body: withReference(model, 'data:application/pdf;base64,JVBERi0='),
      path: `${CONTENT}[1].image`,
      code: 'InvalidImage',
      problem: /not an image/,
    },
  );
}

acceptedByValidator('images: accepted', accepted);
rejectedOverHttp('images: rejected', rejected);
