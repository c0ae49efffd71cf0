# The API and the worker share one image; docker-compose.yml picks the command.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY scripts ./scripts
USER node
EXPOSE 3000
CMD ["npx", "tsx", "src/api.ts"]
