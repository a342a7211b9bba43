import { describeChannelConformance } from '@roster/channel-host/conformance';
import { startFakeDiscord } from './fake-discord.js';

describeChannelConformance('discord', { start: () => startFakeDiscord() });
