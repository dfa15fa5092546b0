export * from '@hloserve/common/errors';
