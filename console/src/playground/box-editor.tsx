import { useRef, useState } from 'preact/hooks';
import type { Box, InputImage } from './form-state';

const MAX_BOXES = 2;
/** A drag shorter than this (in original pixels) is a click, not a box. */
const MIN_SIDE = 4;

interface BoxEditorProps {
  image: InputImage;
  index: number;
  onBoxes: (boxes: Box[]) => void;
}

/**
 * The image with its boxes drawn over it in an SVG whose coordinates are the original image's
 * pixels, so what the mouse draws and the numbers below are the values `bbox_list` carries.
 */
export function BoxEditor({ image, index, onBoxes }: BoxEditorProps) {
  const svg = useRef<SVGSVGElement>(null);
  const [draft, setDraft] = useState<{ start: [number, number]; box: Box } | undefined>();
  const { width, height } = image;
  const full = image.boxes.length >= MAX_BOXES;

  function pixelAt(event: PointerEvent): [number, number] {
    const rect = (svg.current as SVGSVGElement).getBoundingClientRect();
    const x = Math.round(((event.clientX - rect.left) / rect.width) * width);
    const y = Math.round(((event.clientY - rect.top) / rect.height) * height);
    return [Math.min(Math.max(x, 0), width), Math.min(Math.max(y, 0), height)];
  }
  function boxFrom(start: [number, number], end: [number, number]): Box {
    return [
      Math.min(start[0], end[0]),
      Math.min(start[1], end[1]),
      Math.max(start[0], end[0]),
      Math.max(start[1], end[1]),
    ];
  }

  return (
    <figure class="box-editor">
      <div class="box-canvas">
        <img
          src={image.preview}
          alt={`Input image ${index + 1}: ${image.name}`}
          draggable={false}
        />
        <svg
          ref={svg}
          viewBox={`0 0 ${width} ${height}`}
          preserveAspectRatio="none"
          class={full ? 'boxes full' : 'boxes'}
          data-testid={`box-canvas-${index}`}
          aria-label={`Draw up to two boxes on image ${index + 1} with the mouse`}
          onPointerDown={(event) => {
            if (full) return;
            (event.currentTarget as Element).setPointerCapture(event.pointerId);
            const start = pixelAt(event);
            setDraft({ start, box: boxFrom(start, start) });
          }}
          onPointerMove={(event) => {
            if (draft !== undefined)
              setDraft({ start: draft.start, box: boxFrom(draft.start, pixelAt(event)) });
          }}
          onPointerUp={(event) => {
            if (draft === undefined) return;
            const box = boxFrom(draft.start, pixelAt(event));
            setDraft(undefined);
            if (box[2] - box[0] >= MIN_SIDE && box[3] - box[1] >= MIN_SIDE)
              onBoxes([...image.boxes, box]);
          }}
        >
          {[...image.boxes, ...(draft === undefined ? [] : [draft.box])].map((box, boxIndex) => (
            <rect
              key={boxIndex}
              x={box[0]}
              y={box[1]}
              width={box[2] - box[0]}
              height={box[3] - box[1]}
              class={boxIndex >= image.boxes.length ? 'draft' : 'box'}
              vector-effect="non-scaling-stroke"
            />
          ))}
        </svg>
      </div>
      <figcaption>
        {image.name} · {width}×{height} px
        {image.boxes.map((box, boxIndex) => (
          <BoxFields
            key={boxIndex}
            label={`Image ${index + 1}, box ${boxIndex + 1}`}
            box={box}
            onChange={(changed) =>
              onBoxes(image.boxes.map((old, at) => (at === boxIndex ? changed : old)))
            }
            onRemove={() => onBoxes(image.boxes.filter((_, at) => at !== boxIndex))}
          />
        ))}
        {image.boxes.length === 0 && <span class="hint"> Drag over the image to mark a box.</span>}
        {!full && (
          <button
            type="button"
            class="link"
            onClick={() => onBoxes([...image.boxes, centredBox(width, height)])}
          >
            Add a box without the mouse
          </button>
        )}
      </figcaption>
    </figure>
  );
}

/** The middle half of the image each way, a box to adjust in the fields below. */
function centredBox(width: number, height: number): Box {
  return [
    Math.round(width / 4),
    Math.round(height / 4),
    Math.round((width * 3) / 4),
    Math.round((height * 3) / 4),
  ];
}

const CORNERS = ['x1', 'y1', 'x2', 'y2'] as const;

function BoxFields(props: {
  label: string;
  box: Box;
  onChange: (box: Box) => void;
  onRemove: () => void;
}) {
  return (
    <fieldset class="box-fields">
      <legend>{props.label} (original pixels)</legend>
      {CORNERS.map((corner, at) => (
        <label key={corner}>
          {corner}
          <input
            type="number"
            min={0}
            value={props.box[at]}
            onInput={(event) => {
              const next = [...props.box] as Box;
              next[at] = Number(event.currentTarget.value);
              props.onChange(next);
            }}
          />
        </label>
      ))}
      <button type="button" class="link" onClick={props.onRemove}>
        Remove
      </button>
    </fieldset>
  );
}
