import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, messageOf } from '../api';

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
    let timer: ReturnType<typeof setTimeout>;
    const check = () => {
      api<{ mode: string }>('/console/api/validate', { body: JSON.parse(text) as unknown })
        .then((answer) => current && setValidation({ state: 'valid', mode: answer.mode }))
        .catch((error: unknown) => {
          if (!current) return;
          // Over the console's allowance: the body is not at fault; ask again when allowed.
          if (error instanceof ApiError && error.code === 'Throttling.RateQuota') {
            timer = setTimeout(check, (error.retryAfterSeconds ?? 1) * 1000);
            return;
          }
          setValidation({ state: 'invalid', message: messageOf(error) });
        });
    };
    setValidation({ state: 'checking' });
    timer = setTimeout(check, SETTLE_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [text]);
  return validation;
}
