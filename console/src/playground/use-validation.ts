import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api';

export type Validation =
  { state: 'checking' } | { state: 'valid'; mode: string } | { state: 'invalid'; message: string };

/** How long the form must stay unchanged before it is checked again. */
const SETTLE_MS = 250;

/**
 * The gateway's own validator's verdict on `body` (POST /console/api/validate), asked again
 * whenever the body changes: the console has no copy of the rules.
 */
export function useValidation(body: Record<string, unknown>): Validation {
  const text = JSON.stringify(body);
  const [validation, setValidation] = useState<Validation>({ state: 'checking' });
  useEffect(() => {
    let current = true;
    setValidation({ state: 'checking' });
    const timer = setTimeout(() => {
      api<{ mode: string }>('/console/api/validate', { body: JSON.parse(text) as unknown })
        .then((answer) => current && setValidation({ state: 'valid', mode: answer.mode }))
        .catch(
          (error: unknown) =>
            current && setValidation({ state: 'invalid', message: messageOf(error) }),
        );
    }, SETTLE_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [text]);
  return validation;
}
