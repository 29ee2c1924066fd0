import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GenerationResult, GenerationService } from '../../generation/generation-service.js';
import { b64ImagesResponse, openImages, urlImagesResponse } from '../../openai/images-response.js';
import type { OpenAiImageRequest } from '../../openai/openai-image-request.js';
import { inOpenAiTerms } from '../../openai/openai-terms.js';
import type { StoredImages } from '../../storage/stored-images.js';
import { endOfBodyAnswer } from '../body-hand-over.js';
import { followOutcome } from '../hooks/ledger.js';
import type { PublicOrigins } from '../public-origins.js';
import { runGeneration, runUnbilledGeneration } from '../run-generation.js';

export interface OpenAiAnswerOptions {
  generation: GenerationService;
  /** Where base64 answers read the images from. */
  storedImages: StoredImages;
  now: () => number;
  /** What the answers' image URLs name. */
  origins: PublicOrigins;
}

/** Answers an OpenAI image request: the image URLs, or their bytes (`b64_json`). */
export type OpenAiAnswer = (
  request: FastifyRequest,
  reply: FastifyReply,
  imageRequest: OpenAiImageRequest,
) => Promise<unknown>;

/**
 * How an OpenAI image request is answered, and when its images are billed: URLs are billed before
 * the answer, bytes once the answer was handed over whole (docs/admission.md).
 */
export function openAiAnswer(options: OpenAiAnswerOptions): OpenAiAnswer {
  // Bill, then answer: the images' URLs are billed before the caller may have them.
  const answerUrls = async (
    request: FastifyRequest,
    generationRequest: OpenAiImageRequest['request'],
    reply: FastifyReply,
  ) => {
    const { result } = await runGeneration(request, reply, options.generation, generationRequest, {
      origins: options.origins,
    }).catch((error: unknown) => {
      // Input images carry their OpenAI names already; bounding boxes still say parameters.
      throw inOpenAiTerms(error, []);
    });
    return urlImagesResponse(generationRequest, result, createdOf(result));
  };

  // Answer, then bill: the images' bytes are billed once the whole answer is handed over.
  const answerBase64 = async (
    request: FastifyRequest,
    generationRequest: OpenAiImageRequest['request'],
    reply: FastifyReply,
  ) => {
    const { result, unbilled } = await runUnbilledGeneration(
      request,
      reply,
      options.generation,
      generationRequest,
      { origins: options.origins, storeImages: true },
    ).catch((error: unknown) => {
      throw inOpenAiTerms(error, []);
    });
    let opened: Readable[];
    try {
      // Every image opened before the answer begins: one that cannot be read back is an error
      // answer, billed nothing, rather than a cut answer.
      opened = await openImages(options.storedImages, result.imageUrls);
    } catch (error) {
      await unbilled?.release(error);
      throw error;
    }
    // Followed from before the answer begins: its row and log line wait for its bill.
    if (unbilled === undefined) void endOfBodyAnswer(reply, opened, undefined);
    else followOutcome(request, endOfBodyAnswer(reply, opened, unbilled));
    const body = b64ImagesResponse(generationRequest, result, createdOf(result), opened);
    return reply.type('application/json; charset=utf-8').send(body);
  };

  // A replay answers the first answer's time, as it answers its images.
  const createdOf = (result: GenerationResult) =>
    Math.floor((result.createdAt ?? options.now()) / 1000);

  return (
    request: FastifyRequest,
    reply: FastifyReply,
    { request: generationRequest, responseFormat }: OpenAiImageRequest,
  ) =>
    responseFormat === 'b64_json'
      ? answerBase64(request, generationRequest, reply)
      : answerUrls(request, generationRequest, reply);
}
