import { ApiError, api } from './api';

/** Who the signed-in token is, as far as the console needs to know. */
export interface Identity {
  name: string;
  admin: boolean;
}

interface TokenView {
  name: string;
  admin: boolean;
}

/**
 * Asks the gateway who `token` is: GET /me names it; a gateway without /me (404) is asked
 * whether the token authenticates at all (GET /v1/models) and whether it is an admin's
 * (GET /admin/channels). Throws ApiError 401 for a token the gateway refuses.
 */
export async function whoAmI(token: string): Promise<Identity> {
  try {
    const me = await api<TokenView>('/me', { token });
    return { name: me.name, admin: me.admin };
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 404) throw error;
  }
  await api('/v1/models', { token });
  try {
    await api('/admin/channels', { token });
    return { name: 'admin token', admin: true };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return { name: 'token', admin: false };
    throw error;
  }
}
