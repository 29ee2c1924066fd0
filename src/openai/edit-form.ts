import {
  MASK_REFUSAL,
  BOOLEAN_FIELDS,
  INTEGER_FIELDS,
  STRUCTURED_EXTRAS,
} from './openai-fields.js';
import type { UploadedImage } from './openai-image-request.js';
import { fieldError } from './openai-terms.js';
import type { UploadedForm } from './uploaded-form.js';

export interface EditFields {
  /** The text fields as an OpenAI request body, typed as JSON would type them. */
  body: Record<string, unknown>;
  uploads: UploadedImage[];
}

const INTEGER = /^-?[0-9]+$/;

/**
 * Form fields are text. The fields that are numbers, booleans or structures in JSON get those
 * types back, so the shared validator judges them as it judges JSON; text that is none of these
 * is passed on as text and refused there with the field's name ("must be an integer").
 */
function typed(name: string, text: string): unknown {
  if (INTEGER_FIELDS.has(name) && INTEGER.test(text)) return Number(text);
  if (BOOLEAN_FIELDS.has(name) && (text === 'true' || text === 'false')) return text === 'true';
  if (STRUCTURED_EXTRAS.has(name)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw fieldError(name, 'must be JSON text in a form field, e.g. [[[0, 0, 512, 512]]]');
    }
  }
  return text;
}

/** The edits route's multipart form as an OpenAI request body and its image uploads, in order. */
export function readEditForm(form: UploadedForm): EditFields {
  const entries = new Map<string, unknown>();
  for (const { name, value } of form.fields) {
    if (entries.has(name)) throw fieldError(name, 'is given more than once');
    entries.set(name, typed(name, value));
  }
  const uploads: UploadedImage[] = [];
  form.files.forEach((file, index) => {
    if (file.field === 'mask') throw fieldError('mask', MASK_REFUSAL);
    if (file.field !== 'image' && file.field !== 'image[]')
      throw fieldError(file.field, 'is not a file field: images go in image or image[]');
    uploads.push({ name: file.name, bytes: form.bytesOf(index) });
  });
  return { body: Object.fromEntries(entries), uploads };
}
