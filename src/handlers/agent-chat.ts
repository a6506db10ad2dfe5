// Agent chat (POST /api/v2/chat).
import type { Handler } from '../../generated/handlers.ts';

export const chat: Handler<'chat'> = async () => {
  throw new Error('todo');
};
