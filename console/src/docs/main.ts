import SwaggerUIBundle from 'swagger-ui-dist/swagger-ui-es-bundle.js';
import 'swagger-ui-dist/swagger-ui.css';
import { storedToken } from '../session';
import './docs.css';

// The reference of both front doors, rendered from the gateway's own /openapi.json. No online
// validator badge (it would fetch from swagger.io); a console sign-in in this tab authorizes the
// "Try it out" requests.
const ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#docs',
  validatorUrl: null,
  deepLinking: true,
  tryItOutEnabled: false,
  onComplete: () => {
    const token = storedToken();
    if (token !== undefined) ui.preauthorizeApiKey('bearer', token);
  },
});
