/**
 * The signed-in token lives in sessionStorage only: it ends with the tab, is never put in a URL
 * or a cookie, and is sent only as the Authorization header of the console's own requests.
 */
const KEY = 'imagegate.token';

export function storedToken(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function storeToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
