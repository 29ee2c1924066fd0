declare module 'swagger-ui-dist/swagger-ui-es-bundle.js' {
  interface SwaggerUi {
    preauthorizeApiKey(scheme: string, value: string): void;
  }
  const SwaggerUIBundle: (options: Record<string, unknown>) => SwaggerUi;
  export default SwaggerUIBundle;
}
