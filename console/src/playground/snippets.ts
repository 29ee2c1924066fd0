/** The playground's request as code a caller can paste: curl, DashScope SDK, OpenAI SDK, AI SDK. */

export interface Snippet {
  id: string;
  title: string;
  code: string;
}

const TOKEN = '$IMAGEGATE_TOKEN';

export function snippetsFor(body: Record<string, unknown>, origin: string): Snippet[] {
  const json = JSON.stringify(body, null, 2);
  const parameters = (body.parameters ?? {}) as Record<string, unknown>;
  const content = (
    (body.input as { messages: { content: Record<string, string>[] }[] }).messages[0]?.content ?? []
  ).map((item) =>
    item.image?.startsWith('oss://') ? { image: 'file:///path/to/image.png' } : item,
  );
  const prompt = content.find((item) => item.text !== undefined)?.text ?? '';
  const model = String(body.model);
  return [
    {
      id: 'curl',
      title: 'curl',
      code: [
        `curl -sS ${origin}/api/v1/services/aigc/multimodal-generation/generation \\`,
        `  -H "Authorization: Bearer ${TOKEN}" \\`,
        `  -H 'Content-Type: application/json' \\`,
        ...(json.includes('"oss://') ? ["  -H 'X-DashScope-OssResourceResolve: enable' \\"] : []),
        `  -d '${json.replace(/'/g, "'\\''")}'`,
      ].join('\n'),
    },
    {
      id: 'python',
      title: 'Python (dashscope)',
      code: [
        'import os',
        'import dashscope',
        'from dashscope import MultiModalConversation',
        '',
        `dashscope.base_http_api_url = "${origin}/api/v1"`,
        'response = MultiModalConversation.call(',
        '    api_key=os.environ["IMAGEGATE_TOKEN"],',
        `    model=${JSON.stringify(model)},`,
        `    messages=[{"role": "user", "content": ${pythonLiteral(content)}}],`,
        ...Object.entries(parameters).map(([key, value]) => `    ${key}=${pythonLiteral(value)},`),
        ')',
        'print(response.output.choices[0].message.content)',
      ].join('\n'),
    },
    {
      id: 'openai',
      title: 'OpenAI SDK (JavaScript)',
      code: [
        "import OpenAI from 'openai';",
        '',
        `const client = new OpenAI({ baseURL: '${origin}/v1', apiKey: process.env.IMAGEGATE_TOKEN });`,
        'const result = await client.images.generate({',
        `  model: ${JSON.stringify(model)},`,
        `  prompt: ${JSON.stringify(prompt)},`,
        `  n: ${typeof parameters.n === 'number' ? parameters.n : 1},`,
        '});',
        'console.log(result.data.map((image) => image.url));',
      ].join('\n'),
    },
    {
      id: 'ai-sdk',
      title: 'AI SDK',
      code: [
        "import { createOpenAI } from '@ai-sdk/openai';",
        "import { generateImage } from 'ai';",
        '',
        `const gateway = createOpenAI({ baseURL: '${origin}/v1', apiKey: process.env.IMAGEGATE_TOKEN });`,
        'const { images } = await generateImage({',
        `  model: gateway.image(${JSON.stringify(model)}),`,
        `  prompt: ${JSON.stringify(prompt)},`,
        `  n: ${typeof parameters.n === 'number' ? parameters.n : 1},`,
        '});',
        'console.log(images.length);',
      ].join('\n'),
    },
  ];
}

function pythonLiteral(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null || value === undefined) return 'None';
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([key, member]) => `${JSON.stringify(key)}: ${pythonLiteral(member)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}
