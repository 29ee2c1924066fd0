import { useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from '../api';
import { BoxEditor } from './box-editor';
import type { Box, InputImage } from './form-state';
import { imageSize, previewOf, uploadWithoutTransparency } from './upload';

interface ImageInputsProps {
  model: string;
  images: InputImage[];
  boxesAllowed: boolean;
  onImages: (change: (images: InputImage[]) => InputImage[]) => void;
}

let nextId = 0;

/** Input images from a file picker, a drop, a paste or a URL; local files go through uploads. */
export function ImageInputs({ model, images, boxesAllowed, onImages }: ImageInputsProps) {
  const [busy, setBusy] = useState(0);
  const [problem, setProblem] = useState<string | undefined>();
  const [url, setUrl] = useState('');
  const [over, setOver] = useState(false);

  // A preview holds its image's bytes (up to 20 MiB) until its blob: URL is revoked: when the
  // image is removed, or when the playground is left.
  const shown = useRef<{ images: InputImage[]; mounted: boolean }>({ images, mounted: true });
  shown.current.images = images;
  useEffect(() => {
    const current = shown.current;
    current.mounted = true;
    return () => {
      current.mounted = false;
      for (const image of current.images) URL.revokeObjectURL(image.preview);
    };
  }, []);

  /** Runs one image's loading with the busy count shown, and its failure said under `name`. */
  async function adding(name: string, load: () => Promise<InputImage>): Promise<void> {
    setBusy((count) => count + 1);
    try {
      const image = await load();
      if (!shown.current.mounted) {
        URL.revokeObjectURL(image.preview);
        return;
      }
      onImages((current) => [...current, image]);
    } catch (error) {
      setProblem(`${name}: ${messageOf(error)}`);
    } finally {
      setBusy((count) => count - 1);
    }
  }

  async function addFiles(files: readonly File[]): Promise<void> {
    setProblem(undefined);
    for (const file of files.filter((candidate) => candidate.type.startsWith('image/'))) {
      const name = file.name || 'pasted image';
      await adding(name, async () => {
        const preview = URL.createObjectURL(file);
        try {
          const [reference, size] = await Promise.all([
            uploadWithoutTransparency(file, model, preview),
            imageSize(preview),
          ]);
          return { id: `image-${nextId++}`, name, reference, preview, ...size, boxes: [] };
        } catch (error) {
          URL.revokeObjectURL(preview);
          throw error;
        }
      });
    }
  }

  /** An image by URL: the request names the URL, and the gateway's preview of it is shown. */
  async function addUrl(reference: string): Promise<void> {
    setProblem(undefined);
    await adding(reference, async () => ({
      id: `image-${nextId++}`,
      name: reference,
      reference,
      ...(await previewOf(reference)),
      boxes: [],
    }));
  }

  useEffect(() => {
    const onPaste = (event: ClipboardEvent) => {
      const files = [...(event.clipboardData?.files ?? [])];
      if (files.length > 0) void addFiles(files);
    };
    addEventListener('paste', onPaste);
    return () => removeEventListener('paste', onPaste);
  });

  const setBoxes = (id: string, boxes: Box[]) =>
    onImages((current) => current.map((image) => (image.id === id ? { ...image, boxes } : image)));

  return (
    <section class="inputs" aria-label="Input images">
      <div
        class={over ? 'drop over' : 'drop'}
        onDragOver={(event) => {
          event.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(event) => {
          event.preventDefault();
          setOver(false);
          void addFiles([...(event.dataTransfer?.files ?? [])]);
        }}
      >
        <label class="button">
          Choose images…
          <input
            type="file"
            accept="image/png,image/jpeg,image/webp,image/bmp"
            multiple
            class="visually-hidden"
            data-testid="file-input"
            onChange={(event) => {
              void addFiles([...(event.currentTarget.files ?? [])]);
              event.currentTarget.value = '';
            }}
          />
        </label>
        <span class="hint">or drop them here, or paste one (Ctrl+V)</span>
        {busy > 0 && <span role="status"> Adding {busy} image(s)…</span>}
      </div>
      <form
        class="url-row"
        onSubmit={(event) => {
          event.preventDefault();
          const reference = url.trim();
          if (reference === '') return;
          setUrl('');
          void addUrl(reference);
        }}
      >
        <label for="image-url">Image URL</label>
        <input
          id="image-url"
          type="url"
          placeholder="https://example.com/photo.png"
          value={url}
          onInput={(event) => setUrl(event.currentTarget.value)}
        />
        <button type="submit">Add URL</button>
      </form>
      {problem !== undefined && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      <div class="image-list">
        {images.map((image, index) => (
          <div class="image-item" key={image.id}>
            {boxesAllowed ? (
              <BoxEditor
                image={image}
                index={index}
                onBoxes={(boxes) => setBoxes(image.id, boxes)}
              />
            ) : (
              <p class="url-image">
                {index + 1}. {image.name}
              </p>
            )}
            <button
              type="button"
              class="link"
              onClick={() => {
                URL.revokeObjectURL(image.preview);
                onImages((current) => current.filter((other) => other.id !== image.id));
              }}
            >
              Remove image {index + 1}
            </button>
          </div>
        ))}
      </div>
    </section>
  );
}
